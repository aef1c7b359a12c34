//! [`Observers`]: several observers in a connection's one observer slot.

use std::sync::Arc;

use super::{MessageEvent, Observer, RequestEvent, SharedObserver, line_to, message, request};
use crate::observe::tap::TapEvent;

/// Several observers as one: each is told every event, in the order they were added, and a
/// panic in one is caught on its own (the others are still told).
/// [`Config::with_observer`](crate::Config::with_observer) makes one when a connection gets
/// a second observer; build one by hand to hand the same set to several connections.
#[derive(Clone, Default)]
pub struct Observers(Vec<SharedObserver>);

impl Observers {
    /// No observer yet.
    pub fn new() -> Self {
        Observers::default()
    }

    /// Adds `observer`, told after the ones added before it.
    #[must_use]
    pub fn with(mut self, observer: SharedObserver) -> Self {
        self.0.push(observer);
        self
    }

    /// How many observers this holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether this holds no observer.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As the one observer of a connection: `None` when empty, the observer itself when
    /// there is one (no fan-out to go through), else this.
    pub fn into_shared(mut self) -> Option<SharedObserver> {
        match self.0.len() {
            0 => None,
            1 => self.0.pop(),
            _ => Some(Arc::new(self)),
        }
    }
}

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observers")
            .field("len", &self.0.len())
            .finish()
    }
}

impl Observer for Observers {
    fn line(&self, event: TapEvent<'_>) {
        for observer in &self.0 {
            line_to(&**observer, event);
        }
    }

    fn message(&self, event: &MessageEvent<'_>) {
        for observer in &self.0 {
            message(&**observer, event);
        }
    }

    fn request(&self, event: &RequestEvent<'_>) {
        for observer in &self.0 {
            request(&**observer, event);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::observe::tap::Direction;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    struct Named(&'static str, Arc<Log>);

    impl Observer for Named {
        fn line(&self, event: TapEvent<'_>) {
            if let TapEvent::Line(_, line) = event {
                let line = String::from_utf8_lossy(line);
                self.1.0.lock().unwrap().push(format!("{} {line}", self.0));
            }
        }
    }

    struct Panics;

    impl Observer for Panics {
        fn line(&self, _: TapEvent<'_>) {
            panic!("observer bug");
        }
    }

    #[test]
    fn each_observer_is_told_in_the_order_added_and_a_panic_stops_none_of_the_others() {
        let log = Arc::new(Log::default());
        let all = Observers::new()
            .with(Arc::new(Named("a", log.clone())))
            .with(Arc::new(Panics))
            .with(Arc::new(Named("b", log.clone())));
        assert_eq!(all.len(), 3);
        all.line(TapEvent::Line(Direction::Incoming, b"{}"));
        assert_eq!(*log.0.lock().unwrap(), ["a {}", "b {}"]);
    }

    #[test]
    fn one_observer_is_installed_as_itself() {
        assert!(Observers::new().into_shared().is_none());
        let one: SharedObserver = Arc::new(Panics);
        let shared = Observers::new().with(one.clone()).into_shared().unwrap();
        assert!(Arc::ptr_eq(&shared, &one));
    }
}
