/** A skill call that did not produce an output: its code and message reach the caller. */
export class SkillFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'SkillFailure';
  }
}
