use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct MachineConfig {}

#[derive(serde::Serialize, serde::Deserialize)]
struct Network {
    id: String,
}

struct Machines;

type Cx = Context<MachineConfig>;

#[async_trait]
impl Infrastructure for Machines {
    type Config = MachineConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(ResourceDescriptor::new(
            "example.com",
            "v1",
            "machines",
            "Machine",
        ))
        .steps()
    }

    async fn identity(
        &self,
        cx: &IdentityContext<MachineConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some("machines".into()), Some(cx.profile().into())])
    }

    // Must see the last step's effect: the pass observes again after
    // `converge`, and a later pass that finds the machine running runs no
    // step at all.
    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let state = machine_state(cx.profile()).await?;
        let exists = state.is_some();
        Ok(Observation::exists(exists)
            .matching(exists)
            .ready(state.as_deref() == Some("running")))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let (steps, name) = (cx.steps(), cx.profile());
        // The cloud assigns the network's ID: the step's key is the client
        // token, and a step cut short looks before it creates.
        let network: Network = steps
            .run("network", |step| async move {
                if step.interrupted() {
                    if let Some(id) = find_network(step.key()).await? {
                        return Ok(Network { id });
                    }
                }
                Ok(Network {
                    id: create_network(name, step.key()).await?,
                })
            })
            .await?;
        // Once "network" is recorded done, later passes of this run skip it
        // and get its recorded result back.
        steps
            .run("machine", |step| async move {
                create_machine(name, &network.id, step.key()).await
            })
            .await?;
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

fn machines() -> Result<Package, blue_kubernetes::Error> {
    Package::new(Machines)
}
