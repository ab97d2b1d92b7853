import pg from 'pg';

export const SERVER_URL = process.env.TEST_DATABASE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';

export function databaseUrl(name: string): string {
  return `${SERVER_URL}/${name}`;
}

/** Runs statements on the server's maintenance database (CREATE/DROP DATABASE cannot run elsewhere). */
export async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
