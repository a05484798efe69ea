//! A fixed-capacity ring buffer: the last `capacity` items of a stream (log tails, moving windows).

/// Holds at most `capacity` items; pushing onto a full buffer evicts the oldest.
#[derive(Debug, Clone)]
pub struct Ring<T> {
    slots: Vec<Option<T>>,
    head: usize, // index of the oldest item
    len: usize,
}

impl<T> Ring<T> {
    /// An empty ring holding at most `capacity` items. Panics when `capacity` is 0.
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0, "a ring needs a capacity of at least 1");
        Ring { slots: (0..capacity).map(|_| None).collect(), head: 0, len: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.capacity()
    }

    /// Appends `item` as the newest; when the ring is full the oldest item is evicted and returned.
    pub fn push(&mut self, item: T) -> Option<T> {
        if self.is_full() {
            let evicted = self.slots[self.head].replace(item);
            self.head = (self.head + 1) % self.capacity();
            return evicted;
        }
        let tail = (self.head + self.len) % self.capacity();
        self.slots[tail] = Some(item);
        self.len += 1;
        None
    }

    /// Removes and returns the oldest item.
    pub fn pop(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let item = self.slots[self.head].take();
        self.head = (self.head + 1) % self.capacity();
        self.len -= 1;
        item
    }

    /// The `index`-th oldest item (0 is the oldest), or None past the end.
    pub fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len {
            return None;
        }
        self.slots[(self.head + index) % self.len].as_ref()
    }

    /// The newest item.
    pub fn last(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|index| self.get(index))
    }

    /// The items from oldest to newest.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(move |index| self.get(index))
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        while self.pop().is_some() {}
    }
}

impl<T: Clone> Ring<T> {
    /// The items from oldest to newest, cloned into a Vec.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().cloned().collect()
    }
}
