//! A [`WatchStream`] from the chunks of a response body, as they arrive.

use crate::watch_format::{Decoded, EventDecoder};
use crate::{Error, WatchStream};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::pin::Pin;
use std::time::Duration;
use tokio::time::Instant;

/// How long after the requested `timeoutSeconds` a stream may still run
/// before it is given up as silently dead. The API server closes a watch at
/// `timeoutSeconds` itself, so only a lost connection ever waits this long.
pub(crate) const WATCH_GRACE: Duration = Duration::from_secs(5);

struct State {
    chunks: Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>,
    decoder: EventDecoder,
    ready: Decoded,
    deadline: Instant,
    lifetime: Duration,
    finished: bool,
}

/// Decodes `chunks` into events as each chunk arrives. The stream ends when
/// `chunks` ends; an error (from `chunks`, an `ERROR` event or an
/// undecodable line) is its last item; if it is still open `lifetime` after
/// now, it ends with [`Error::Timeout`], so a connection that died without
/// closing is noticed.
pub(crate) fn watch_stream<S>(chunks: S, lifetime: Duration) -> WatchStream
where
    S: Stream<Item = Result<Bytes, Error>> + Send + 'static,
{
    let state = State {
        chunks: Box::pin(chunks),
        decoder: EventDecoder::default(),
        ready: Decoded::new(),
        deadline: Instant::now() + lifetime,
        lifetime,
        finished: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                return Some((item, state));
            }
            if state.finished {
                // Dropping the state here closes the connection at once.
                return None;
            }
            match tokio::time::timeout_at(state.deadline, state.chunks.next()).await {
                Ok(Some(Ok(chunk))) => {
                    state.finished = !state.decoder.feed(&chunk, &mut state.ready);
                }
                Ok(Some(Err(e))) => {
                    state.finished = true;
                    state.ready.push_back(Err(e));
                }
                Ok(None) => {
                    state.finished = true;
                    state.decoder.finish(&mut state.ready);
                }
                Err(_elapsed) => {
                    state.finished = true;
                    state.ready.push_back(Err(Error::Timeout {
                        operation: "watch".into(),
                        timeout_ms: u64::try_from(state.lifetime.as_millis()).unwrap_or(u64::MAX),
                    }));
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, WatchEvent};
    use tokio::sync::mpsc;

    fn channel() -> (
        mpsc::UnboundedSender<Result<Bytes, Error>>,
        impl Stream<Item = Result<Bytes, Error>> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let chunks = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        (tx, chunks)
    }

    fn event(rv: u32) -> String {
        format!(r#"{{"type":"MODIFIED","object":{{"metadata":{{"resourceVersion":"{rv}"}}}}}}"#)
    }

    #[tokio::test(start_paused = true)]
    async fn each_event_is_yielded_as_soon_as_its_line_is_complete() {
        let (tx, chunks) = channel();
        let mut stream = watch_stream(chunks, Duration::from_secs(60));
        let first = event(1);
        let (head, tail) = first.split_at(10);
        tx.send(Ok(Bytes::from(head.to_owned()))).unwrap();
        let waiting = tokio::time::timeout(Duration::from_secs(1), stream.next()).await;
        assert!(waiting.is_err(), "half a line is not an event");
        tx.send(Ok(Bytes::from(format!("{tail}\n{}\n", event(2)))))
            .unwrap();
        for rv in ["1", "2"] {
            let got = stream.next().await.unwrap().unwrap();
            assert_eq!(got.resource_version(), Some(rv));
        }
        drop(tx);
        assert!(stream.next().await.is_none(), "the server closed it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_silent_past_its_lifetime_ends_with_a_timeout() {
        let (tx, chunks) = channel();
        let mut stream = watch_stream(chunks, Duration::from_secs(35));
        tokio::time::advance(Duration::from_secs(20)).await;
        tx.send(Ok(Bytes::from(event(4) + "\n"))).unwrap();
        assert!(matches!(
            stream.next().await,
            Some(Ok(WatchEvent::Modified(_)))
        ));
        let started = Instant::now();
        let err = stream.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(15),
            "lifetime counts from the start"
        );
        assert!(stream.next().await.is_none());
        assert!(tx.is_closed(), "the body is dropped once the stream ended");
    }

    #[tokio::test(start_paused = true)]
    async fn a_broken_body_is_the_last_item() {
        let (tx, chunks) = channel();
        let mut stream = watch_stream(chunks, Duration::from_secs(60));
        tx.send(Ok(Bytes::from(event(1) + "\n"))).unwrap();
        let broken = Error::Proxy {
            problem: "watch connection broke",
            kind: ErrorKind::Unavailable,
        };
        tx.send(Err(broken)).unwrap();
        tx.send(Ok(Bytes::from(event(2) + "\n"))).unwrap();
        assert!(stream.next().await.unwrap().is_ok());
        let err = stream.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert!(stream.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_version_ends_the_stream_with_gone() {
        let (tx, chunks) = channel();
        let mut stream = watch_stream(chunks, Duration::from_secs(60));
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#;
        tx.send(Ok(Bytes::from(format!(
            "{}\n{gone}\n{}\n",
            event(1),
            event(2)
        ))))
        .unwrap();
        assert!(stream.next().await.unwrap().is_ok());
        assert_eq!(
            stream.next().await.unwrap().unwrap_err().kind(),
            ErrorKind::Gone
        );
        assert!(stream.next().await.is_none(), "nothing after the error");
        assert!(tx.is_closed());
    }
}
