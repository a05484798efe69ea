// Writes formatBytes' results around every unit's rounding point, and totalSize's on a few lists, as a
// JSON object to the path given: gym_swe compares it with the reference solution's (sealed checks).
// Nothing here says what the right answers are.
const fs = require("node:fs");
const { formatBytes, totalSize } = require("./dist/bytes.js");

const checks = {};
const offsets = [0, 1, 3, 17, 51, 52, 53, 99, 1000, 51000, 52500, 2 ** 20 * 51];
for (let power = 1; power <= 5; power += 1) {
  const shown = [];
  for (const offset of offsets) {
    const bytes = 1024 ** power - offset;
    if (bytes > 0) {
      shown.push(formatBytes(bytes), formatBytes(-bytes));
    }
  }
  checks[`boundary_${power}`] = shown.join("|");
}
const spread = [];
let bytes = 7;
while (bytes < Number.MAX_SAFE_INTEGER / 3) {
  spread.push(formatBytes(bytes));
  bytes = bytes * 3 + 1;
}
checks.spread = spread.join("|");
checks.totals = [
  ["1023 KiB", "1000 B"],
  ["511.5 MiB", "511.99 MiB"],
  ["1 GiB", "-1 KiB", "7 B"],
  ["1023.96 TiB"],
  ["0.5 KiB", "0.5 KiB", "1022.99 KiB"],
]
  .map((sizes) => totalSize(sizes))
  .join("|");
fs.writeFileSync(process.argv[2], JSON.stringify(checks));
