//! Build kube-apiserver from Debian's `kubernetes` source package and cache
//! it, in the eight steps `xtask/README.md` describes (each prints a
//! progress line).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use super::apt::{apt, ensure_deb_src, has_source_index};
use super::command::run_logged;
use crate::support::temp_dir::TempDir;
use blue_envtest::assets::{self, is_executable, Assets, ETCD, KUBERNETES_VERSION, KUBE_APISERVER};

/// The vendored reflect2 v1.0.1 -> v1.0.2 map-iterator change (Go >= 1.18).
const REFLECT2_PATCH: &str = include_str!("../../../patches/reflect2-go118.patch");

const STEPS: usize = 8;
const APT_PACKAGES: &str = "etcd-server golang-go rsync dpkg-dev patch make openssl";

/// Step `n` of [`STEPS`]: its progress line, `f`, then how long it took.
fn step<T>(n: usize, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    println!("[provision {n}/{STEPS}] {what}");
    let started = Instant::now();
    let out = f()?;
    let secs = started.elapsed().as_secs_f64();
    println!("               done in {secs:.1}s");
    Ok(out)
}

/// The binaries, building and caching them first when needed (a no-op
/// when they are already there).
pub fn ensure_provisioned() -> Result<Assets> {
    if let Some(assets) = assets::resolve()? {
        return Ok(assets);
    }
    provision()?;
    let found = assets::resolve()?;
    found.context("provisioning finished but the control-plane binaries are still missing")
}

/// Makes the cached binaries exist. Idempotent: returns at once when the
/// binaries already resolve (cache or envtest variables).
pub fn provision() -> Result<()> {
    if let Some(found) = assets::resolve()? {
        println!(
            "[provision] nothing to do: kube-apiserver {} and etcd {}",
            found.kube_apiserver.display(),
            found.etcd.display()
        );
        return Ok(());
    }
    let cache = assets::cache_dir().context("neither XDG_CACHE_HOME nor HOME is set")?;
    let total = Instant::now();

    println!("[provision 1/{STEPS}] checking for apt-get (Debian)");
    if which("apt-get").is_none() {
        bail!(
            "provisioning builds kube-apiserver {KUBERNETES_VERSION} from Debian's source package and \
             needs apt-get, which this machine does not have.\n\
             Use envtest assets instead: download them (e.g. `setup-envtest use -p path`) and set \
             KUBEBUILDER_ASSETS to the directory holding `kube-apiserver` and `etcd` \
             (or set TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD to the two binaries)."
        );
    }
    let sudo = !nix::unistd::geteuid().is_root();
    if sudo && which("sudo").is_none() {
        bail!("provisioning runs apt-get and must run as root (or with sudo available)");
    }
    // Removed on drop, whether provisioning succeeds or fails.
    let work = TempDir::new("blue-provision")?;
    let work = work.path();

    step(2, "enabling deb-src apt sources", || {
        if ensure_deb_src(sudo, work)? || !has_source_index(work)? {
            apt(sudo, &["update"], &work.join("apt-update.log"))?;
        }
        Ok(())
    })?;
    step(3, &format!("apt-get install {APT_PACKAGES}"), || {
        let mut install = vec!["install", "-y", "--no-install-recommends"];
        install.extend(APT_PACKAGES.split(' '));
        apt(sudo, &install, &work.join("apt-install.log"))
    })?;

    let cached_apiserver = cache.join(KUBE_APISERVER);
    if !cached_apiserver.exists() {
        build_kube_apiserver(work, &cached_apiserver)?;
    }

    let etcd_link = cache.join(ETCD);
    if !etcd_link.exists() {
        let etcd = which("etcd").context("etcd-server is installed but no etcd in PATH")?;
        fs::create_dir_all(&cache)?;
        let _ = fs::remove_file(&etcd_link); // a dangling link
        std::os::unix::fs::symlink(&etcd, &etcd_link)
            .with_context(|| format!("linking {}", etcd_link.display()))?;
        println!(
            "[provision] linked {} -> {}",
            etcd_link.display(),
            etcd.display()
        );
    }
    println!(
        "[provision] ready in {:.1}s: {}",
        total.elapsed().as_secs_f64(),
        cache.display()
    );
    Ok(())
}

/// Steps 4 to 8.
fn build_kube_apiserver(work: &Path, target: &Path) -> Result<()> {
    let dl = work.join("dl");
    step(4, "apt-get source --download-only kubernetes", || {
        fs::create_dir_all(&dl)?;
        run_logged(
            Command::new("apt-get")
                .args(["source", "--download-only", "-q", "kubernetes"])
                .current_dir(&dl),
            &work.join("apt-source.log"),
        )
    })?;

    let gopath = work.join("gopath");
    let src = gopath.join("src/k8s.io/kubernetes");
    step(5, "unpacking the source (dpkg-source -x)", || {
        let dsc = fs::read_dir(&dl)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|e| e == "dsc"))
            .context("apt-get source produced no .dsc file")?;
        let version = fs::read_to_string(&dsc)?
            .lines()
            .find_map(|l| Some(l.strip_prefix("Version:")?.trim().to_string()))
            .with_context(|| format!("no Version: in {}", dsc.display()))?;
        ensure!(
            upstream_version(&version) == KUBERNETES_VERSION,
            "Debian's kubernetes source is version {version}, expected upstream \
             {KUBERNETES_VERSION} (Debian bookworm); set KUBEBUILDER_ASSETS to use other binaries"
        );
        fs::create_dir_all(src.parent().context("source path has a parent")?)?;
        run_logged(
            Command::new("dpkg-source").arg("-x").arg(&dsc).arg(&src),
            &work.join("dpkg-source.log"),
        )?;
        fs::remove_dir_all(&dl)?;
        println!("               source package version {version}");
        Ok(())
    })?;

    let patching = "patching vendored github.com/modern-go/reflect2 for Go >= 1.18";
    step(6, patching, || {
        let patch = work.join("reflect2-go118.patch");
        fs::write(&patch, REFLECT2_PATCH)?;
        let mut cmd = Command::new("patch");
        cmd.args(["-p1", "--forward", "--batch", "-i"])
            .arg(&patch)
            .current_dir(&src);
        run_logged(&mut cmd, &work.join("patch.log"))
    })?;

    let go = |program: &str| {
        let mut cmd = Command::new(program);
        let mut path = std::env::var("PATH").unwrap_or_default();
        if Path::new("/usr/lib/go/bin/go").exists() {
            path = format!("/usr/lib/go/bin:{path}");
        }
        cmd.current_dir(&src)
            .env("PATH", path)
            .env("GOPATH", &gopath)
            .env("GOCACHE", work.join("gocache"))
            .env("GO111MODULE", "off")
            .env("GOFLAGS", "")
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .env("CGO_ENABLED", "0");
        cmd
    };
    step(7, "make gen_openapi", || {
        run_logged(go("make").arg("gen_openapi"), &work.join("gen-openapi.log"))
    })?;

    let building = "go build k8s.io/kubernetes/cmd/kube-apiserver (about 5 minutes on 2 cores)";
    let built = work.join(KUBE_APISERVER);
    step(8, building, || {
        let pkg = "k8s.io/kubernetes/vendor/k8s.io/component-base/version";
        let ldflags = format!(
            "-s -w -X {pkg}.gitVersion=v{KUBERNETES_VERSION} -X {pkg}.gitMajor=1 \
             -X {pkg}.gitMinor=20 -X {pkg}.gitTreeState=clean"
        );
        let mut build = go("go");
        build
            .args(["build", "-trimpath", "-ldflags", &ldflags, "-o"])
            .arg(&built)
            .arg("k8s.io/kubernetes/cmd/kube-apiserver");
        run_logged(&mut build, &work.join("go-build.log"))
    })?;

    let out = Command::new(&built).arg("--version").output()?;
    let reported = String::from_utf8_lossy(&out.stdout);
    let versioned = reported.contains(&format!("v{KUBERNETES_VERSION}"));
    ensure!(versioned, "built kube-apiserver reports {reported:?}");
    let dir = target.parent().context("cache path has a parent")?;
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{KUBE_APISERVER}.{}", std::process::id()));
    fs::copy(&built, &tmp)?;
    fs::rename(&tmp, target)?;
    println!(
        "[provision] installed {} ({})",
        target.display(),
        reported.trim()
    );
    Ok(())
}

/// `1:1.20.5+really1.20.2-1.1+deb12u1` -> `1.20.2`.
fn upstream_version(debian: &str) -> &str {
    let no_epoch = debian.split_once(':').map_or(debian, |(_, v)| v);
    let upstream = no_epoch.rsplit_once('-').map_or(no_epoch, |(v, _)| v);
    upstream.rsplit_once("really").map_or(upstream, |(_, v)| v)
}

/// First executable `name` in `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::upstream_version;

    #[test]
    fn upstream_version_strips_epoch_revision_and_really() {
        assert_eq!(
            upstream_version("1.20.5+really1.20.2-1.1+deb12u1"),
            "1.20.2"
        );
        assert_eq!(upstream_version("1:1.20.2-1"), "1.20.2");
        assert_eq!(upstream_version("1.20.2"), "1.20.2");
    }
}
