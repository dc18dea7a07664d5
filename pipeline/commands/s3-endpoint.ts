/** `--s3-endpoint` of every command that takes an s3:// location (serve, plan, shard, publish). */
export const S3_ENDPOINT_OPTION = {
  type: 'string',
  describe: 'Endpoint of an S3-compatible store for s3:// locations (path-style; default: AWS_ENDPOINT_URL, else AWS S3). Credentials: the standard AWS chain',
} as const;
