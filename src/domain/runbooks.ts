/**
 * Runbook steps: the ordered actions read out of a runbook's markdown, so an investigation can
 * recommend "follow runbook 'Postgres connection exhaustion' step 2" and a reader finds step 2.
 *
 * The rule, on top-level lines (indented at most three spaces) outside fenced code blocks:
 * 1. If any heading of level 2 to 6 starts with "Step" and a number (`## Step 1: Drain the pool`),
 *    each such heading is a step; its text is the heading without "Step", the number and a
 *    separator (`:`, `.`, `)`, `-`, `–`, `—`), or, when nothing is left, the first line of the
 *    section under it.
 * 2. Otherwise, if there are numbered list items (`1. …`, `2) …`), each one is a step.
 * 3. Otherwise each bullet item (`- …`, `* …`, `+ …`, with or without a `[ ]` / `[x]` box) is one.
 * 4. Otherwise the runbook has no steps.
 * Only the first kind found counts (sub-lists under a step heading are not steps of their own);
 * a step's text is its first line, trimmed. Steps are numbered from 1 in document order,
 * whatever numbers the markdown wrote.
 */
export interface RunbookStep {
  number: number;
  text: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}#{1,6}(?:\s|$)/;
const STEP_HEADING = /^ {0,3}#{2,6}\s+step\s*\d+\b\s*[:.)\-–—]?(.*)$/i;
const CLOSING_HASHES = /\s+#+\s*$/;
const NUMBERED_ITEM = /^ {0,3}\d{1,9}[.)]\s+(\S.*)$/;
const BULLET_ITEM = /^ {0,3}[-*+]\s+(?:\[[ xX]\]\s+)?(\S.*)$/;
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;

/** The lines outside fenced code blocks, in order. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split(/\r\n|\r|\n/)) {
    const opener = FENCE.exec(line)?.[1];
    if (fence) {
      if (opener && opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      continue;
    }
    if (opener) {
      fence = opener;
      continue;
    }
    lines.push(line);
  }
  return lines;
}

function fromStepHeadings(lines: string[]): string[] {
  const steps: string[] = [];
  lines.forEach((line, index) => {
    const rest = STEP_HEADING.exec(line)?.[1];
    if (rest === undefined) return;
    const title = rest.replace(CLOSING_HASHES, '').trim();
    if (title) {
      steps.push(title);
      return;
    }
    const section = lines.slice(index + 1);
    const end = section.findIndex((l) => HEADING.test(l));
    const firstLine = (end === -1 ? section : section.slice(0, end)).map((l) => l.trim()).find((l) => l.length > 0);
    steps.push(
      firstLine ??
        line
          .trim()
          .replace(/^#+\s*/, '')
          .replace(CLOSING_HASHES, ''),
    );
  });
  return steps;
}

function fromItems(lines: string[], item: RegExp): string[] {
  const steps: string[] = [];
  for (const line of lines) {
    if (THEMATIC_BREAK.test(line)) continue;
    const text = item.exec(line)?.[1]?.trim();
    if (text) steps.push(text);
  }
  return steps;
}

export function parseRunbookSteps(markdown: string): RunbookStep[] {
  const lines = proseLines(markdown);
  const headings = fromStepHeadings(lines);
  const texts =
    headings.length > 0
      ? headings
      : ([NUMBERED_ITEM, BULLET_ITEM].map((item) => fromItems(lines, item)).find((s) => s.length > 0) ?? []);
  return texts.map((text, i) => ({ number: i + 1, text }));
}
