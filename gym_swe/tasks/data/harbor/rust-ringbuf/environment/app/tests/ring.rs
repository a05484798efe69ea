use ringbuf::Ring;

#[test]
fn keeps_the_newest_items() {
    let mut ring = Ring::with_capacity(3);
    assert_eq!(ring.push(1), None);
    assert_eq!(ring.push(2), None);
    assert_eq!(ring.push(3), None);
    assert_eq!(ring.push(4), Some(1));
    assert_eq!(ring.to_vec(), vec![2, 3, 4]);
    assert_eq!(ring.last(), Some(&4));
}

#[test]
fn pops_oldest_first() {
    let mut ring = Ring::with_capacity(2);
    ring.push("a");
    ring.push("b");
    assert_eq!(ring.pop(), Some("a"));
    assert_eq!(ring.pop(), Some("b"));
    assert_eq!(ring.pop(), None);
    assert!(ring.is_empty());
}

#[test]
#[should_panic]
fn zero_capacity_panics() {
    Ring::<u8>::with_capacity(0);
}
