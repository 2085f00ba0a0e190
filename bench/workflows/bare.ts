/** The smallest workflow there is: what the Temporal dev server can do with nothing else to do. */
export async function bareWorkflow(): Promise<number> {
  return 1;
}
