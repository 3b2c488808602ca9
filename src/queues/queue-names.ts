/** The queue of concordance queries: one job per logical query, from debounce to result. */
export const CONCORDANCE_QUERIES = 'concordance-queries';
