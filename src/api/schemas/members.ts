import { z } from '@hono/zod-openapi';
import { memberRoles } from '../../db/schema/identity.js';
import { emailAddress, MAX_EMAIL_LENGTH } from '../../domain/email.js';
import { limitParam } from './common.js';

/** An email address, trimmed and lower-cased (accounts are one per lower-cased email). */
export const MemberEmail = emailAddress.openapi({
  type: 'string',
  format: 'email',
  maxLength: MAX_EMAIL_LENGTH,
  example: 'ada@example.com',
});

export const MemberRoleSchema = z.enum(memberRoles).openapi({ description: '`admin` or `member`' });

export const InviteMemberBody = z
  .object({ email: MemberEmail, role: MemberRoleSchema })
  .strict()
  .openapi('InviteMember');

export const ChangeMemberRoleBody = z.object({ role: MemberRoleSchema }).strict().openapi('ChangeMemberRole');

export const Member = z
  .object({
    userId: z.string().openapi({ example: 'usr_01j9z3k8w5q2v7n4m6t8r0y2x4' }),
    email: z.string(),
    name: z.string().nullable(),
    role: MemberRoleSchema,
    joinedAt: z.string().openapi({ description: 'When the membership was made' }),
  })
  .openapi('Member');

export const Invitation = z
  .object({
    invitationId: z.string().openapi({ example: 'inv_01j9z3k8w5q2v7n4m6t8r0y2x4' }),
    email: z.string(),
    role: MemberRoleSchema,
    invitedBy: z.string().openapi({ description: 'The user id of the admin who invited (or renewed)' }),
    expiresAt: z.string(),
  })
  .openapi('Invitation');

export const ListMembersQuery = z.object({ limit: limitParam(50, 200), cursor: z.string().min(1).max(512).optional() });

export const MemberList = z
  .object({
    members: z.array(Member),
    invitations: z.array(Invitation).openapi({ description: 'Open invitations: not accepted and not expired' }),
    nextCursor: z.string().nullable().openapi({
      description: 'One keyset over members and invitations together, newest first; null on the last page',
    }),
  })
  .openapi('MemberList');

const pathId = (name: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name, in: 'path' } });

export const MemberIdParam = z.object({ userId: pathId('userId') });
export const InvitationIdParam = z.object({ invitationId: pathId('invitationId') });
