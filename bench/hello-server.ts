// The ceiling for bench/creation.ts: a bare Express 5 "hello JSON" endpoint, started as a child
// process so that it does not share a thread with the load generator.
import express from 'express';

const port = Number(process.env.PORT);
const app = express();
app.get('/', (_req, res) => {
  res.json({ hello: 'world' });
});
app.listen(port, '127.0.0.1', (error) => {
  if (error) throw error;
});
