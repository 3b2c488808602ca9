/** Key scans for the privacy stores: every server of a cluster is walked (see redis-client.ts). */
export { globLiteral, scanKeys } from '../queues/redis-client.ts';
