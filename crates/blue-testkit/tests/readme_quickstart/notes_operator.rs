use blue_kubernetes::package::{blocking, NoOutputs, UserFacingMessage, ValidationErrors};
use blue_kubernetes::{config::Names, crd::CrdConfig, resource::is_object_name, runner::Runner, *};
use blue_kubernetes_client::ResourceDescriptor;
use std::{fs, path::PathBuf};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteConfig {
    /// What the file holds (doc comments become the CRD's descriptions).
    text: String,
}

/// The package: a Note's infrastructure is a file in this directory.
struct Notes(PathBuf);

#[async_trait]
impl Infrastructure for Notes {
    type Config = NoteConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(ResourceDescriptor::new("notes.example.com", "v1", "notes", "Note"))
    }

    // The profile names the file: refuse one that could be a path (`../x`).
    async fn validate(&self, cx: &Context<NoteConfig>) -> CallbackResult<ValidationErrors> {
        let refusal = UserFacingMessage::new("config.profile must be a DNS name");
        Ok(if is_object_name(cx.profile()) { ValidationErrors::new() } else { refusal.into() })
    }

    async fn observe(&self, cx: &Context<NoteConfig>) -> CallbackResult<Observation<NoOutputs>> {
        let file = self.0.join(cx.profile());
        let text = blocking(move || Ok(fs::read_to_string(file).ok())).await?;
        let seen = Observation::exists(text.is_some()).ready(text.is_some());
        Ok(seen.matching(text.as_ref() == Some(&cx.config().text)))
    }

    async fn converge(&self, cx: &Context<NoteConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        let (dir, text) = (self.0.clone(), cx.config().text.clone());
        let file = dir.join(cx.profile());
        blocking(move || Ok(fs::create_dir_all(dir).and_then(|()| fs::write(file, text))?)).await?;
        Ok(Outcome::done())
    }

    // Runs for `deletionPolicy: Destroy` only; `Retain` keeps the file.
    async fn delete(&self, cx: &Context<NoteConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        let file = self.0.join(cx.profile());
        blocking(move || Ok(fs::remove_file(file)?)).await?;
        Ok(Outcome::done())
    }
}

fn main() -> std::process::ExitCode {
    let names = Names::for_domain("notes.example.com");
    let notes = Notes(PathBuf::from("notes"));
    Runner::new("notes-operator")
        .names(names.clone())
        .crd(ResourceSchema::of::<Notes>(), CrdConfig::default().with_names(names))
        .packages(|_| Ok(vec![Package::new(notes)?]))
        .run()
}
