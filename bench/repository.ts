import { describeFirehose, measureFirehose, type FirehoseResult } from "./firehose.ts";
import type { BenchPostgres } from "./lib/postgres.ts";
import { describeRepoCommit, measureRepoCommit, type RepoCommitResult } from "./repo-commit.ts";

/**
 * The repository's cases of `npm run bench` (issue 18; docs/decisions/0027, 0029), on the engine bench/run.ts is
 * measuring: createRecord on a repository of 10,000 records against @atproto/repo's floor, and the firehose.
 */
export type RepositoryReport = { commit: RepoCommitResult; firehose: FirehoseResult };

export async function benchRepository(postgres?: BenchPostgres): Promise<RepositoryReport> {
  console.log("Measuring createRecord on a repository of 10,000 records, and @atproto/repo alone doing the same (the floor)…");
  const commit = await measureRepoCommit({ postgres });
  console.log(`  ${describeRepoCommit(commit)}`);
  for (const statement of commit.statements ?? []) console.log(`    ${statement.perCommit.toFixed(2)} × ${statement.query.replace(/\s+/g, " ").slice(0, 120)}`);
  console.log("Measuring the firehose (100 subscribers × 1,000 events; then one subscriber that never reads; then 8 replays that never read)…");
  const firehose = await measureFirehose({ postgres });
  console.log(`  ${describeFirehose(firehose)}`);
  return { commit, firehose };
}

export function describeRepository(report: RepositoryReport): string {
  return `  ${describeRepoCommit(report.commit)}\n  ${describeFirehose(report.firehose)}`;
}
