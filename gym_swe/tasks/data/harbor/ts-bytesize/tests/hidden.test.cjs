// The hidden tests, run by test.sh with node's test runner next to the freshly compiled dist/.
const test = require("node:test");
const assert = require("node:assert");
const { formatBytes, parseBytes, totalSize } = require("./dist/bytes.js");

test("what rounds up to 1024 of a unit is shown in the next unit", () => {
  assert.strictEqual(formatBytes(1048575), "1.0 MiB");
  assert.strictEqual(formatBytes(1048525), "1.0 MiB");
  assert.strictEqual(formatBytes(1024 ** 3 - 1), "1.0 GiB");
  assert.strictEqual(formatBytes(1024 ** 4 - 40), "1.0 TiB");
  assert.strictEqual(formatBytes(-(1024 ** 2 - 1)), "-1.0 MiB");
  assert.strictEqual(totalSize(["1023 KiB", "1023 B"]), "1.0 MiB");
});

test("just below the rounding point stays in the smaller unit", () => {
  assert.strictEqual(formatBytes(1048524), "1023.9 KiB");
  assert.strictEqual(formatBytes(1024 * 1000), "1000.0 KiB");
  assert.strictEqual(formatBytes(1024 ** 2 * 1023), "1023.0 MiB");
});

test("one decimal, rounded to nearest", () => {
  assert.strictEqual(formatBytes(2047), "2.0 KiB");
  assert.strictEqual(formatBytes(1126), "1.1 KiB");
  assert.strictEqual(formatBytes(1075), "1.0 KiB");
  assert.strictEqual(formatBytes(3 * 1024 ** 2 + 900 * 1024), "3.9 MiB");
  assert.strictEqual(formatBytes(Number.MAX_SAFE_INTEGER), "8.0 PiB");
  assert.strictEqual(formatBytes(999), "999 B");
});

test("bad input", () => {
  assert.throws(() => formatBytes(1.5), RangeError);
  assert.throws(() => formatBytes(Number.NaN), RangeError);
  assert.throws(() => parseBytes("12 XB"), SyntaxError);
  assert.strictEqual(parseBytes("1.0 MiB"), 1048576);
  assert.strictEqual(parseBytes(" 2KiB "), 2048);
});
