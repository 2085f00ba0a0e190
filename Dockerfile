# syntax=docker/dockerfile:1
#
# One image for the api (default CMD), the Temporal worker and the migration job:
#   docker compose overrides the command with `node dist/temporal/worker.js` or
#   `node dist/db/migrate.js`.

# Node 24: the Active LTS line (Node 20 reached end of life on 2026-04-30).
ARG NODE_IMAGE=node:24-trixie-slim

# ---------------------------------------------------------------------------
# build: full install (dev dependencies included), `tsc -p tsconfig.build.json` and the workflow bundle
# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# patches/: fixes to dependencies applied by patch-package at install (postinstall).
COPY package.json package-lock.json ./
COPY patches ./patches
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The workflow bundle is built here once (npm run build:workflows writes dist/workflow-bundle.js),
# so the worker does not run webpack at start-up.
RUN npm run build && npm run build:workflows

# ---------------------------------------------------------------------------
# runtime: production dependencies only (no tsx, embedded-postgres, typescript or vitest),
# compiled JavaScript and the SQL migrations
# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
ENV WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
WORKDIR /app

COPY package.json package-lock.json ./
COPY patches ./patches
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --no-audit --no-fund

# dist/ holds dist/api/server.js, dist/temporal/worker.js, dist/db/migrate.js and the
# dist/workflow-bundle.js the worker loads (WORKFLOW_BUNDLE_PATH); the migrations are read from
# <root>/drizzle, where <root> is the parent of dist/.
COPY --from=build /app/dist ./dist
COPY drizzle ./drizzle

# The application files stay root-owned (read-only for the app); only the default data
# directory (<root>/.data) is writable by the unprivileged user.
# (.data/exports: audit export files, a volume shared by the api and the worker in compose).
RUN mkdir -p /app/.data/exports && chown -R node:node /app/.data

USER node
# Reachable from outside the container (the api's default, 127.0.0.1, is not).
ENV HOST=0.0.0.0
EXPOSE 8080
CMD ["node", "dist/api/server.js"]
