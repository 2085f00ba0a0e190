import { z } from 'zod';

/** RFC 5321's bound on a forward path: longer addresses cannot be delivered to. */
export const MAX_EMAIL_LENGTH = 254;

/** Emails compare lower-cased: `Ada@Example.com` and `ada@example.com` are one person. */
export const normalEmail = (email: string) => email.trim().toLowerCase();

/** An email address as accounts hold it: trimmed, lower-cased, deliverable length (the api and the CLI). */
export const emailAddress = z
  .string()
  .trim()
  .toLowerCase()
  .max(MAX_EMAIL_LENGTH)
  .pipe(z.email('must be an email address'));
