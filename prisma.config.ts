import { defineConfig } from 'prisma/config';

// Prisma 7 no longer reads .env; the URL comes from the environment or the documented default.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/approval_gate',
  },
});
