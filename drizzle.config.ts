import { defineConfig } from 'drizzle-kit';

// Migrations are generated (`npm run db:generate`), reviewed and committed; never `push`.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './drizzle',
});
