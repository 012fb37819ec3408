# The Tool Integration Service as a container (README "Running in a container").
#
#   docker build -t tis .
#   docker run -p 3000:3000 -v tis-data:/data -e PUBLIC_URL=https://tis.example.edu tis
#
# Three stages: `build` compiles with the dev dependencies (TypeScript), `runtime-deps` installs only the
# runtime dependencies (`npm ci --omit=dev`; build tools are there only for better-sqlite3 should no
# prebuilt binary fit), and the final image holds package.json, dist/ and those node_modules, run as the
# unprivileged `node` user. `npm ci` needs the manifest of every workspace the lock names (the kit, client/).
# `npm run check:prod-install` runs these same steps without Docker (decision KIT-22).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json ./client/
RUN npm ci
COPY . .
RUN npm run build

FROM node:20-bookworm-slim AS runtime-deps
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY client/package.json ./client/
RUN npm ci --omit=dev && npm cache clean --force

FROM node:20-bookworm-slim
# MALLOC_MMAP_THRESHOLD_: what `npm start` sets for node too (decision PERF-222): glibc keeps its mmap
# threshold at 128 KB instead of raising it to the largest buffer freed, and gives large blocks back.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=runtime-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The lock's workspace link (node_modules/tool-integration-kit -> ../client) resolves, as in check:prod-install.
COPY package.json ./
COPY client/package.json ./client/
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# /healthz answers 200 while the store answers, 503 while shutting down or when the database does not.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# What `npm start` runs, without npm in between: node is PID 1 and gets `docker stop`'s SIGTERM itself.
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=1024", "dist/server/main.js"]
