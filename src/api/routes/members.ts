import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { revokeMemberSessions } from '../../auth/sessions.js';
import { appendAudit } from '../../db/repositories/audit.js';
import {
  deleteMembership,
  findMember,
  inviteMember,
  leavesNoAdmin,
  listMembersPage,
  lockAdmins,
  MAX_OPEN_INVITATIONS,
  setMemberRole,
  withdrawInvitation,
  type Invitation as InvitationRow,
  type Member as MemberRow,
} from '../../db/repositories/members.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  ChangeMemberRoleBody,
  Invitation,
  InvitationIdParam,
  InviteMemberBody,
  ListMembersQuery,
  Member,
  MemberIdParam,
  MemberList,
} from '../schemas/members.js';

const tags = ['members'];

const memberView = (m: MemberRow) => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joinedAt: m.joinedAt.toISOString(),
});

const invitationView = (i: InvitationRow) => ({
  invitationId: i.id,
  email: i.email,
  role: i.role,
  invitedBy: i.invitedBy,
  expiresAt: i.expiresAt.toISOString(),
});

const listRoute = createRoute({
  method: 'get',
  path: '/v1/members',
  tags,
  summary: "The tenant's members and open invitations, newest first",
  ...access('member'),
  request: { query: ListMembersQuery },
  responses: { 200: jsonResponse(MemberList, 'A page of members and invitations'), ...errorResponses(400, 401, 403) },
});

const inviteRoute = createRoute({
  method: 'post',
  path: '/v1/members',
  tags,
  summary: 'Invite an email to the tenant (renews its open invitation); accepted at a sign-in with that email',
  description:
    'The invitation expires in 7 days and is accepted at the first sign-in with a verified matching email. 409 `conflict` when the email is already a member, or when the tenant has 500 open invitations.',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: InviteMemberBody } } } },
  responses: { 201: jsonResponse(Invitation, 'The open invitation'), ...errorResponses(400, 401, 403, 409) },
});

const withdrawRoute = createRoute({
  method: 'delete',
  path: '/v1/members/invitations/{invitationId}',
  tags,
  summary: 'Withdraw an open invitation',
  ...access('admin'),
  request: { params: InvitationIdParam },
  responses: { 204: { description: 'Withdrawn' }, ...errorResponses(401, 403, 404) },
});

const changeRoleRoute = createRoute({
  method: 'patch',
  path: '/v1/members/{userId}',
  tags,
  summary: "Change a member's role; it applies to their very next request",
  description: '409 `last_admin` when it would leave the tenant without an admin.',
  ...access('admin'),
  request: {
    params: MemberIdParam,
    body: { required: true, content: { 'application/json': { schema: ChangeMemberRoleBody } } },
  },
  responses: { 200: jsonResponse(Member, 'The member'), ...errorResponses(400, 401, 403, 404, 409) },
});

const removeRoute = createRoute({
  method: 'delete',
  path: '/v1/members/{userId}',
  tags,
  summary: 'Remove a member: their next request is 401 and their refresh tokens are revoked at once',
  description: '409 `last_admin` for the tenant’s last admin.',
  ...access('admin'),
  request: { params: MemberIdParam },
  responses: { 204: { description: 'Removed' }, ...errorResponses(401, 403, 404, 409) },
});

const NO_MEMBER = 'No member of this tenant has that user id';
const LAST_ADMIN = 'The tenant would be left without an admin; make another member admin first';

export function registerMemberRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listRoute, async (c) => {
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listMembersPage(deps.db, c.var.auth.tenantId, deps.clock(), query.limit, after);
    const last = page.rows.at(-1);
    return c.json(
      {
        members: page.rows.flatMap((r) => (r.kind === 'member' ? [memberView(r.member)] : [])),
        invitations: page.rows.flatMap((r) => (r.kind === 'invitation' ? [invitationView(r.invitation)] : [])),
        nextCursor:
          page.hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id, order: 'desc' }) : null,
      },
      200,
    );
  });

  app.openapi(inviteRoute, async (c) => {
    const { email, role } = c.req.valid('json');
    const auth = c.var.auth;
    const invited = await inviteMember(deps.db, {
      tenantId: auth.tenantId,
      email,
      role,
      actor: { type: 'user', id: auth.userId, requestId: c.var.requestId },
      now: deps.clock(),
    });
    if (invited.outcome === 'already_member')
      throw new AppError('conflict', 'That email is already a member of this tenant');
    if (invited.outcome === 'too_many') {
      throw new AppError(
        'conflict',
        `A tenant can have at most ${MAX_OPEN_INVITATIONS} open invitations; withdraw some or wait for them to be accepted`,
      );
    }
    return c.json(invitationView(invited.invitation), 201);
  });

  app.openapi(withdrawRoute, async (c) => {
    const auth = c.var.auth;
    const gone = await withdrawInvitation(deps.db, {
      tenantId: auth.tenantId,
      invitationId: c.req.valid('param').invitationId,
      actor: { type: 'user', id: auth.userId, requestId: c.var.requestId },
    });
    if (!gone) throw new AppError('not_found', 'No open invitation of this tenant has that id');
    return c.body(null, 204);
  });

  app.openapi(changeRoleRoute, async (c) => {
    const auth = c.var.auth;
    const { userId } = c.req.valid('param');
    const { role } = c.req.valid('json');
    const now = deps.clock();
    const member = await deps.db.transaction(async (tx) => {
      const locked = await lockAdmins(tx, auth.tenantId, userId);
      if (!locked.role) throw new AppError('member_not_found', NO_MEMBER);
      if (leavesNoAdmin(locked.role, role, locked.admins)) throw new AppError('last_admin', LAST_ADMIN);
      if (locked.role !== role) {
        await setMemberRole(tx, auth.tenantId, userId, role, now);
        await appendAudit(tx, {
          tenantId: auth.tenantId,
          actorType: 'user',
          actorId: auth.userId,
          action: 'member.role_changed',
          targetType: 'member',
          targetId: userId,
          requestId: c.var.requestId,
          details: { from: locked.role, to: role },
        });
      }
      return (await findMember(tx, auth.tenantId, userId))!;
    });
    return c.json(memberView(member), 200);
  });

  app.openapi(removeRoute, async (c) => {
    const auth = c.var.auth;
    const { userId } = c.req.valid('param');
    const now = deps.clock();
    await deps.db.transaction(async (tx) => {
      const locked = await lockAdmins(tx, auth.tenantId, userId);
      if (!locked.role) throw new AppError('member_not_found', NO_MEMBER);
      if (leavesNoAdmin(locked.role, 'removed', locked.admins)) throw new AppError('last_admin', LAST_ADMIN);
      const member = await findMember(tx, auth.tenantId, userId);
      await deleteMembership(tx, auth.tenantId, userId);
      // Their refresh tokens die with the membership; their access token is refused by bearer-auth.
      await revokeMemberSessions(tx, auth.tenantId, userId, now);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'member.removed',
        targetType: 'member',
        targetId: userId,
        requestId: c.var.requestId,
        details: { email: member?.email ?? null, role: locked.role },
      });
    });
    return c.body(null, 204);
  });
}
