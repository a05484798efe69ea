// Human-readable byte sizes with binary units, as `ls -lh` and `du -h` print them, and back.

export const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] as const;
export type Unit = (typeof UNITS)[number];

/**
 * Formats a whole number of bytes in the largest unit in which it is at least 1, with one decimal
 * (plain bytes have none): 1536 -> "1.5 KiB", 1023 -> "1023 B". The number shown is rounded to one
 * decimal and is always below 1024: what would round up to 1024 of a unit is shown as 1.0 of the next
 * ("1.0 MiB", never "1024.0 KiB"), up to PiB. Negative sizes keep their sign. Throws a RangeError when
 * `bytes` is not a safe integer.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isSafeInteger(bytes)) {
    throw new RangeError(`not a whole number of bytes: ${bytes}`);
  }
  const sign = bytes < 0 ? "-" : "";
  let value = Math.abs(bytes);
  if (value < 1024) {
    return `${sign}${value} B`;
  }
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${sign}${value.toFixed(1)} ${UNITS[unit]}`;
}

/**
 * Parses a size such as "1.5 KiB", "512B" or "2 MiB" (units as in UNITS, case-sensitive, a space between
 * number and unit optional) into bytes, rounded to the nearest whole byte. Throws a SyntaxError for
 * anything else.
 */
export function parseBytes(text: string): number {
  const match = /^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$/.exec(text);
  const unit = match ? UNITS.indexOf(match[2] as Unit) : -1;
  if (match === null || unit < 0) {
    throw new SyntaxError(`not a size: ${JSON.stringify(text)} (units: ${UNITS.join(", ")})`);
  }
  return Math.round(Number(match[1]) * 1024 ** unit);
}

/** The total of sizes given as text, formatted: totalSize(["1 KiB", "512 B"]) is "1.5 KiB". */
export function totalSize(sizes: string[]): string {
  return formatBytes(sizes.reduce((total, size) => total + parseBytes(size), 0));
}
