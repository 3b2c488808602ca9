import { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type {
  AppJobScheduler,
  JobSchedulerUpdateResult,
  QueueMetrics,
} from '@bull-board/api/typings/app';
import { ReadOnlyError } from '../errors/read-only-error.ts';

/** Every change the board could ask of a read-only queue. */
export const readOnly = (): never => {
  throw new ReadOnlyError();
};

/**
 * What a board queue that is not a BullMQ queue (the dead letters, the polls) answers alike: no
 * logs, metrics, schedulers or concurrency, never paused, and every change refused. Subclasses
 * list and find their jobs.
 */
export abstract class ReadOnlyAdapter extends BaseAdapter {
  async getJobLogs(): Promise<string[]> {
    return [];
  }

  async getMetrics(): Promise<QueueMetrics> {
    return { meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 };
  }

  async isPaused(): Promise<boolean> {
    return false;
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return null;
  }

  async getJobSchedulers(): Promise<Omit<AppJobScheduler, 'queueName'>[]> {
    return [];
  }

  async getJobSchedulersCount(): Promise<number> {
    return 0;
  }

  clean = readOnly;
  addJob = readOnly;
  pause = readOnly;
  resume = readOnly;
  empty = readOnly;
  obliterate = readOnly;
  promoteAll = readOnly;
  removeJobScheduler = readOnly;
  setGlobalConcurrency = readOnly;
  updateJobScheduler = (): Promise<JobSchedulerUpdateResult> => readOnly();
}
