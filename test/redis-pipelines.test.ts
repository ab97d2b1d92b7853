import { describe, expect, it } from 'vitest';
import { execPipeline } from '../src/lib/redis.js';
import { useTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;

useTestEnv((created) => ({ env } = created));

describe('execPipeline', () => {
  it('fails with the error of a command that failed, though ioredis answers the pipeline with it beside the others', async () => {
    const redis = env.services.redis;
    const key = `${env.config.REDIS_PREFIX}:pipeline-probe`;
    await redis.set(key, 'not a number');
    const pipeline = () => redis.pipeline().get(key).incr(key).get(key);
    // What ioredis does by itself: no rejection, the error in its place among the results.
    const results = await pipeline().exec();
    expect(results?.map(([error]) => error !== null)).toEqual([false, true, false]);
    await expect(execPipeline(pipeline())).rejects.toThrow(/not an integer/);
    await expect(execPipeline(redis.pipeline().get(key).publish(`${key}:channel`, 'ok'))).resolves.toBeUndefined();
  });
});
