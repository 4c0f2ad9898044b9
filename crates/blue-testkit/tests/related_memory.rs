//! What a cached related object costs the runtime in live heap (issue 20:
//! at most 1 KiB each). A counting allocator measures the bytes the
//! process holds while a runtime runs over 5,000 widgets, each with its
//! ConfigMap, once without the ConfigMaps declared related and once with
//! them: the difference, per ConfigMap, is what the related cache, its
//! reflector and its bookkeeping keep (list pages and events decoded on
//! the way are freed again, so they do not count). Alone in its binary,
//! so no other test allocates meanwhile.

// A counting global allocator needs `unsafe impl GlobalAlloc`: it only
// forwards to `System` and counts, nothing else here is unsafe.
#![allow(unsafe_code)]

mod common;

use blue_kubernetes::start;

use blue_kubernetes::related::Related;
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeCluster, FakeInfra};
use common::*;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; only the count
// of live bytes is kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const N: usize = 5_000;
const OWNER: &str = "example.com/owner";

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

/// Live heap bytes while a runtime runs over `cluster` (the related
/// cache holding `related` objects), settled, less those before it
/// started.
async fn held_by_a_runtime(cluster: &FakeCluster, infra: &FakeInfra, related: bool) -> isize {
    let package = infra.package_with(widgets(), |b| match related {
        true => b.related(Related::annotated(config_maps(), OWNER)),
        false => b,
    });
    let before = LIVE.load(Ordering::Relaxed);
    let controller = build(cluster, tokio_clock(), vec![package], |c| {
        c.poll_ms = 500;
        c.resync_ms = 3_600_000;
    });
    let runtime = start(controller).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(runtime.cached(), N, "every widget cached");
    assert_eq!(runtime.related_cached(), if related { N } else { 0 });
    let held = LIVE.load(Ordering::Relaxed) - before;
    runtime.stop().await;
    held
}

#[tokio::test(start_paused = true)]
async fn a_cached_related_object_holds_at_most_one_kibibyte() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let collection = format!("/api/v1/namespaces/{NS}/configmaps");
    // Checked hourly: nothing runs while it is measured.
    let spec = json!({"reconcileInterval": "1h", "config": {"value": 1}});
    for i in 0..N {
        let name = format!("widget-{i:05}");
        cluster.create(&widgets(), NS, &name, spec.clone());
        let annotations = json!({OWNER: name});
        let cm =
            json!({"metadata": {"name": name, "annotations": annotations}, "data": {"k": "v"}});
        cluster.create_object(&collection, cm);
    }
    // The first runtime makes every widget Ready (the fake cluster keeps
    // what it writes); the next two find nothing to do.
    held_by_a_runtime(&cluster, &infra, false).await;
    let without = held_by_a_runtime(&cluster, &infra, false).await;
    let with = held_by_a_runtime(&cluster, &infra, true).await;
    let per_object = (with - without) / N as isize;
    println!(
        "live heap: {without} B without related objects, {with} B with {N}: {per_object} B each"
    );
    assert!(
        (0..=1024).contains(&per_object),
        "{per_object} B per cached related object"
    );
}
