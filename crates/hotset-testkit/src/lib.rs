//! Test support shared by Hotset's test suites: a naive reference model of the document
//! engine over plain JSON values, and seeded generators of schemas, documents and
//! queries for property tests. Never used by production code.
#![forbid(unsafe_code)]

pub mod durable;
pub mod generate;
pub mod mariadb;
pub mod postgres;
pub mod reference;

/// Runs a future to its end on this thread, parking between polls: for tests of async
/// waits in crates that have no runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}
