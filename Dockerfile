# One image for every process type; docker-compose.yml and the Procfile pick the command.
# Node 22 LTS; the service also runs on Node 24 (docs/operations.md, "Runtime").
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace's packages (the client, the MCP server) are not part of the image; npm reads their manifests.
COPY packages/client/package.json ./packages/client/
COPY packages/mcp/package.json ./packages/mcp/
# `npm install` generates the Prisma client from the schema (the `prepare` script).
COPY prisma ./prisma
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json prisma.config.ts ./
COPY src ./src
COPY workers ./workers
# Optional dependencies go too: the prisma CLI and its tree (an optional peer of @prisma/client, which
# npm keeps otherwise; migrations run on @prisma/schema-engine-wasm), pg-cloudflare, and msgpackr's
# native accelerator (it runs in JavaScript without it). See docs/decisions.md.
RUN npm run build && npm prune --omit=dev --omit=optional

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The migrations and the schema are read at release time.
COPY --from=build /app/prisma ./prisma
USER node
EXPOSE 3000
CMD ["node", "dist/src/server.js"]
