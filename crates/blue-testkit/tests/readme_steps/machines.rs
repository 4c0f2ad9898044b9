use blue_kubernetes::{CallbackResult, Observation, Package, WorkflowOutcome};
use blue_kubernetes_client::ResourceDescriptor;

#[derive(serde::Serialize, serde::Deserialize)]
struct Network {
    id: String,
}

fn machines() -> Result<Package, blue_kubernetes::Error> {
    Package::builder(ResourceDescriptor::new("example.com", "v1", "machines", "Machine"))
        .steps()
        .identity(|opts| Ok(vec![Some("machines".into()), Some(opts.profile().into())]))
        // Must see the last step's effect: the pass observes again after
        // `converge`, and a later pass that finds the machine running
        // runs no step at all.
        .observe_async(|opts| async move {
            let state = machine_state(opts.profile()).await?;
            let exists = state.is_some();
            Ok(Observation::new(exists, exists, state.as_deref() == Some("running")))
        })
        .converge_async(|opts| async move {
            let steps = opts.steps();
            let name = opts.profile();
            // The cloud assigns the network's ID: the step's key is the
            // client token, and a step cut short looks before it creates.
            let network: Network = steps
                .run("network", |step| async move {
                    if step.interrupted() {
                        if let Some(id) = find_network(step.key()).await? {
                            return Ok(Network { id });
                        }
                    }
                    Ok(Network { id: create_network(name, step.key()).await? })
                })
                .await?;
            // Once "network" is recorded done, later passes of this run
            // skip it and get its recorded result back.
            steps
                .run("machine", |step| async move {
                    create_machine(name, &network.id, step.key()).await
                })
                .await?;
            Ok(WorkflowOutcome::new())
        })
        .delete(|_opts| Ok(WorkflowOutcome::new()))
        .build()
}
