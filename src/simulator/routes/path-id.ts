import { z } from 'zod';

/** Longest id accepted in a path; longer ones get 422 (the router is told to let them through). */
export const MAX_PATH_ID_LENGTH = 128;

/** A path parameter naming a job, relationship or patient. */
export const PathIdSchema = z.string().min(1).max(MAX_PATH_ID_LENGTH);
