# syntax=docker/dockerfile:1
# Combo game platform service. NOT built or run on the development machine (no Docker there):
# see docs/deployment.md.

# ---- build: compile TypeScript, build the web console (dist/console) ----
FROM node:24-slim AS build
WORKDIR /app
# better-sqlite3 downloads a prebuilt binary; the toolchain is the fallback when none matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY console ./console
RUN npm run build

# ---- deps: production dependencies only (same base image, so native modules match) ----
FROM node:24-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

# ---- runtime ----
FROM node:24-slim
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/var/lib/combo
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The checkout client library (served at /sdk/v1/checkout.js).
COPY client ./client
COPY package.json ./
# Non-root; DATA_DIR is only used by the embedded SQLite mode (mount a volume there).
RUN mkdir -p /var/lib/combo && chown node:node /var/lib/combo
USER node
EXPOSE 8080
# Liveness only (/healthz); orchestrators should route traffic on /readyz (database reachable).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains (finishes in-flight requests, up to SHUTDOWN_TIMEOUT_MS) and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
