const test = require("node:test");
const assert = require("node:assert");
const { formatBytes, parseBytes, totalSize } = require("../dist/bytes.js");

test("plain bytes have no decimal", () => {
  assert.strictEqual(formatBytes(0), "0 B");
  assert.strictEqual(formatBytes(1023), "1023 B");
});

test("larger sizes get a unit and one decimal", () => {
  assert.strictEqual(formatBytes(1024), "1.0 KiB");
  assert.strictEqual(formatBytes(1536), "1.5 KiB");
  assert.strictEqual(formatBytes(5 * 1024 ** 3), "5.0 GiB");
  assert.strictEqual(formatBytes(-2048), "-2.0 KiB");
});

test("parse and total", () => {
  assert.strictEqual(parseBytes("1.5 KiB"), 1536);
  assert.strictEqual(parseBytes("512B"), 512);
  assert.throws(() => parseBytes("3 kb"), SyntaxError);
  assert.strictEqual(totalSize(["1 KiB", "512 B"]), "1.5 KiB");
});
