"""Tasks made from a repository with tests (`gym-swe tasks generate`): SWEGym-v0 records, validated.

- `repository`: the source repository, copied into a git mirror beside the task file, with its environment;
- `testruns`: the repository's tests run in gym_swe's local sandbox, each test's outcome and the output;
- one module per method of making a bug: `history` (a commit's code change, taken back), `mutate` (a
  program transformation of a function the tests cover), `rewrite` (a function rewritten by a model);
- `statements`: the problem statement, from the failing tests' output (templated, or by a model);
- `pipeline`: candidates to validated records, in parallel, appended as they are made, resumable.
"""
