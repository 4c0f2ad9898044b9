//! CRD fidelity: the CRD generated for each config shape (see
//! `crd_fidelity/shapes.rs`), and objects created against it, judged by
//! the real API server (kube-apiserver 1.20 through blue-envtest) and by
//! FakeCluster. They must agree on whether the CRD is accepted, whether
//! each object is, and what is stored after pruning and defaulting; and
//! every CRD the generator emits must be accepted.
//!
//! Needs the control plane's binaries (`cargo xtask control-plane
//! provision`, or `KUBEBUILDER_ASSETS`); without them it fails saying so.

#[path = "crd_fidelity/judges.rs"]
mod judges;
#[path = "crd_fidelity/shapes.rs"]
mod shapes;

use futures::future::join_all;
use judges::{object, Fake, Real, Verdict};
use shapes::{Expect, Sample, Shape};
use std::fmt::Write;

/// What the run found: every row, the rows where the judges disagree, and
/// the rows that are not what the matrix expects.
#[derive(Default)]
struct Report {
    matrix: String,
    disagreements: String,
    unexpected: String,
}

/// A verdict on one line, the server's words joined.
fn show(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Stored(v) if v.is_null() => "accepted".to_string(),
        Verdict::Stored(v) => format!("stored {v}"),
        Verdict::Refused(why) => {
            let words: Vec<&str> = why.lines().map(str::trim).collect();
            format!("refused ({})", words.join(" "))
        }
    }
}

/// One row of the matrix.
fn row(shape: &str, what: &str, real: &Verdict, fake: &Verdict) -> String {
    format!(
        "{shape} / {what}\n    server: {}\n    fake:   {}",
        show(real),
        show(fake)
    )
}

/// Whether the two verdicts on an object agree: both refused, or both
/// stored the same.
fn agree(real: &Verdict, fake: &Verdict) -> bool {
    match (real, fake) {
        (Verdict::Refused(_), Verdict::Refused(_)) => true,
        (Verdict::Stored(a), Verdict::Stored(b)) => a == b,
        _ => false,
    }
}

/// Whether the fake refuses a CRD for the nodes the server names: each
/// node the fake names (`openAPIV3Schema.properties[spec]...default`) is
/// in the server's message.
fn same_nodes(real: &Verdict, fake: &Verdict) -> bool {
    match (real, fake) {
        (Verdict::Refused(server), Verdict::Refused(fake)) => fake
            .split("; ")
            .filter_map(|error| error.split(": ").next())
            .all(|node| server.contains(node)),
        _ => true,
    }
}

/// Whether `real` is what `sample` expects, given how its config decodes.
fn as_expected(shape: &Shape, sample: &Sample, real: &Verdict) -> bool {
    match (sample.expect, real.stored()) {
        (Expect::Refused, stored) => stored.is_none(),
        (expect, Some(spec)) => {
            let decodes = (shape.decode)(&spec["config"]).is_ok();
            decodes == (expect == Expect::Stored)
        }
        (_, None) => false,
    }
}

/// The generator refuses exactly the shapes the matrix says it cannot
/// express, naming their field.
fn generator(shapes: &[Shape], report: &mut Report) {
    for shape in shapes {
        let name = shape.name;
        match (&shape.crd, shape.refused_naming) {
            (Err(why), Some(field)) if why.contains(field) => Ok(()),
            (Err(why), _) => writeln!(report.unexpected, "{name}: generator refused: {why}"),
            (Ok(_), Some(field)) => writeln!(report.unexpected, "{name}: not refused ({field})"),
            (Ok(_), None) => Ok(()),
        }
        .unwrap();
    }
}

/// Both judges on every generated CRD; the shapes both accepted, each with
/// its fake cluster.
fn judge_crds<'a>(real: &Real, shapes: &'a [Shape], report: &mut Report) -> Vec<(&'a Shape, Fake)> {
    let generated: Vec<&Shape> = shapes.iter().filter(|s| s.crd.is_ok()).collect();
    let crds: Vec<_> = generated.iter().map(|s| s.crd.as_ref().unwrap()).collect();
    let mut accepted = Vec::new();
    for (shape, server) in generated.into_iter().zip(real.apply_crds(&crds)) {
        let fake = Fake::new(&real.namespace);
        let faked = fake.apply_crd(shape.crd.as_ref().unwrap());
        let line = row(shape.name, "CRD", &server, &faked);
        writeln!(report.matrix, "{line}").unwrap();
        let by_server = server.stored().is_some();
        if by_server != faked.stored().is_some() || !same_nodes(&server, &faked) {
            writeln!(report.disagreements, "{line}").unwrap();
        }
        if by_server != shape.crd_accepted {
            writeln!(report.unexpected, "{line}").unwrap();
        }
        if by_server && faked.stored().is_some() {
            accepted.push((shape, fake));
        }
    }
    accepted
}

/// Both judges on every sample of the shapes whose CRD both accepted: the
/// server's creates all at once, the fake's one by one.
async fn judge_objects(real: &Real, judged: &[(&Shape, Fake)], report: &mut Report) {
    join_all(judged.iter().map(|(s, _)| real.served(&s.descriptor))).await;
    let ns = &real.namespace;
    let objects: Vec<_> = judged
        .iter()
        .flat_map(|(shape, fake)| {
            shape.samples.iter().map(move |sample| {
                let object = object(&shape.descriptor, ns, sample.name, &sample.spec);
                (*shape, fake, sample, object)
            })
        })
        .collect();
    let created = objects
        .iter()
        .map(|(shape, _, _, object)| real.create(&shape.descriptor, object.clone()));
    let by_server = join_all(created).await;
    for ((shape, fake, sample, object), server) in objects.iter().zip(&by_server) {
        let faked = fake.create(&shape.descriptor, object.clone()).await;
        let mut line = row(shape.name, sample.name, server, &faked);
        let agreed = agree(server, &faked);
        let expected = as_expected(shape, sample, server);
        if !(agreed && expected) && matches!(server, Verdict::Refused(_)) {
            // The client keeps no text of a refusal: ask kubectl why.
            write!(
                line,
                "\n    why:    {}",
                show(&Verdict::Refused(real.explain(object)))
            )
            .unwrap();
        }
        writeln!(report.matrix, "{line}").unwrap();
        if !agreed {
            writeln!(report.disagreements, "{line}").unwrap();
        }
        if !expected {
            writeln!(
                report.unexpected,
                "{line}\n    expected: {:?}",
                sample.expect
            )
            .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_and_the_real_api_server_judge_every_config_shape_alike() {
    let shapes = shapes::all();
    let real = Real::start();
    let mut report = Report::default();
    generator(&shapes, &mut report);
    let judged = judge_crds(&real, &shapes, &mut report);
    judge_objects(&real, &judged, &mut report).await;
    println!("{}", report.matrix);
    assert!(
        report.disagreements.is_empty() && report.unexpected.is_empty(),
        "the judges disagree on:\n{}\nnot as the matrix expects:\n{}",
        report.disagreements,
        report.unexpected
    );
}
