#!/bin/bash
# The reference fix: move to the next unit while the value as it will be shown (rounded to one decimal)
# is 1024 or more, not only while the exact value is.
set -euo pipefail
patch -p1 --forward <<'PATCH'
--- a/src/bytes.ts
+++ b/src/bytes.ts
@@ -21,7 +21,7 @@
     return `${sign}${value} B`;
   }
   let unit = 0;
-  while (value >= 1024 && unit < UNITS.length - 1) {
+  while (Number(value.toFixed(1)) >= 1024 && unit < UNITS.length - 1) {
     value /= 1024;
     unit += 1;
   }
PATCH
