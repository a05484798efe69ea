#!/bin/bash
# The reference fix: an item's slot is the head plus its index, wrapped at the ring's capacity (the
# number of slots), not at the number of items it holds.
set -euo pipefail
patch -p1 --forward <<'PATCH'
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -65,7 +65,7 @@
         if index >= self.len {
             return None;
         }
-        self.slots[(self.head + index) % self.len].as_ref()
+        self.slots[(self.head + index) % self.capacity()].as_ref()
     }
 
     /// The newest item.
PATCH
