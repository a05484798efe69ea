// The hidden tests: Ring against std's VecDeque as the model, and the cases from the report.
use ringbuf::Ring;
use std::collections::VecDeque;

fn model_push(model: &mut VecDeque<u32>, capacity: usize, item: u32) -> Option<u32> {
    let evicted = if model.len() == capacity { model.pop_front() } else { None };
    model.push_back(item);
    evicted
}

#[test]
fn items_after_pops_are_all_there_in_order() {
    let mut ring = Ring::with_capacity(3);
    for item in [10, 20, 30] {
        ring.push(item);
    }
    assert_eq!(ring.pop(), Some(10));
    assert_eq!(ring.to_vec(), vec![20, 30]);
    assert_eq!(ring.last(), Some(&30));
    assert_eq!(ring.pop(), Some(20));
    assert_eq!(ring.to_vec(), vec![30]);
    ring.push(40);
    assert_eq!(ring.to_vec(), vec![30, 40]);
    assert_eq!(ring.get(1), Some(&40));
    assert_eq!(ring.get(2), None);
}

#[test]
fn a_ring_that_was_never_full() {
    let mut ring = Ring::with_capacity(4);
    ring.push('a');
    ring.push('b');
    ring.push('c');
    assert_eq!(ring.pop(), Some('a'));
    ring.push('d');
    assert_eq!(ring.iter().collect::<String>(), "bcd");
    assert_eq!(ring.len(), 3);
    assert!(!ring.is_full());
}

#[test]
fn matches_a_vecdeque_through_mixed_operations() {
    for capacity in 1..=7usize {
        let mut ring = Ring::with_capacity(capacity);
        let mut model = VecDeque::new();
        let mut state: u32 = 12345 + capacity as u32;
        for step in 0..400u32 {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if (state >> 16) % 3 == 0 {
                assert_eq!(ring.pop(), model.pop_front(), "pop at step {step}, capacity {capacity}");
            } else {
                let evicted = model_push(&mut model, capacity, step);
                assert_eq!(ring.push(step), evicted, "push at step {step}, capacity {capacity}");
            }
            assert_eq!(ring.len(), model.len());
            assert_eq!(ring.to_vec(), model.iter().copied().collect::<Vec<_>>(), "capacity {capacity}");
            assert_eq!(ring.last(), model.back(), "capacity {capacity}");
            for index in 0..=capacity {
                assert_eq!(ring.get(index), model.get(index), "get({index}), capacity {capacity}");
            }
        }
        ring.clear();
        assert!(ring.is_empty());
        assert_eq!(ring.iter().count(), 0);
    }
}
