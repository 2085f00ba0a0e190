import { closeSync, openSync, writeSync } from 'node:fs';

export interface TerminalOutput {
  isTTY?: boolean | undefined;
  write(text: string): unknown;
}

/**
 * Writes a secret (npm start's admin token) where only a person reads it (ADR 0281): stdout when
 * it is a terminal, else the controlling terminal (`npm start > app.log` in a shell); never into
 * redirected output, which is a log file or a log collector. Returns where it went, or 'nowhere'
 * (no terminal at all: a service manager or a container), and the caller says how to get one.
 */
export function writeToTerminalOnly(
  text: string,
  stdout: TerminalOutput = process.stdout,
  ttyPath = '/dev/tty',
): 'stdout' | 'tty' | 'nowhere' {
  if (stdout.isTTY) {
    stdout.write(text);
    return 'stdout';
  }
  let fd: number | undefined;
  try {
    // 'r+' opens an existing terminal only: never creates a file at the path.
    fd = openSync(ttyPath, 'r+');
    writeSync(fd, text);
    return 'tty';
  } catch {
    return 'nowhere';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
