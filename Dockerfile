# syntax=docker/dockerfile:1

# One image for every role: APP_ROLE=api, worker or all (docker-compose.yml runs api + worker).
# Node 20 (the latest 20.x, which satisfies "engines": ">=20.19" in package.json) is what CI tests.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: full dependencies, compile TypeScript, build the dashboard (web/ -> dist/web) ---
FROM ${NODE_IMAGE} AS build
ENV SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY web ./web
RUN npm run build

# --- runtime: production dependencies, dist/ and an init; non-root ---
FROM ${NODE_IMAGE} AS runtime
# tini runs as PID 1: it forwards SIGTERM to node (which drains: HTTP, then the
# queue workers' active jobs, then the pools) and reaps zombies.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /app/var/outbox && chown -R node:node /app/var
USER node
EXPOSE 3000
# For the HTTP roles (api, all). A worker serves no HTTP: docker-compose.yml
# gives it `node dist/health/worker-probe.js` instead.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
# node itself, not npm: npm would not pass SIGTERM on, and `docker stop` would end in SIGKILL.
CMD ["node", "dist/main.js"]
