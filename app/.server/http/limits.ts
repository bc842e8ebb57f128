/** Request bodies other than blob uploads are small (forms, JSON): larger ones get 413 in the endpoint's shape. */
export const MAX_BODY_BYTES = 1024 * 1024;
