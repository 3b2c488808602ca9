import type { TestProject } from 'vitest/node';
import { acquireRedis } from './redis-source.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await acquireRedis();
  console.log(`tests use Redis from ${redis.origin}`);
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
