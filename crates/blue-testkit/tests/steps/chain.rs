//! A package whose `converge` is a chain of durable steps `s1..sN` (each
//! handing a token to the next; the last one applies the value) and whose
//! `delete` is `d1`, `d2` (the last one removes it), recording every step
//! it runs, with scripted failures, panics and hooks.

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// What each step returns: the next step gets it, recorded or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    pub step: u32,
    pub value: i64,
}

/// One step the chain ran.
#[derive(Clone, Debug)]
pub struct Ran {
    pub name: String,
    pub key: String,
    pub run: String,
    pub interrupted: bool,
    /// The token the step before it returned.
    pub previous: Option<Token>,
}

type Hook = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    applied: HashMap<String, Value>,
    ran: Vec<Ran>,
    fail: HashMap<String, usize>,
    panic: HashSet<String>,
    hooks: HashMap<String, Hook>,
    errors: Vec<String>,
}

#[derive(Clone)]
pub struct Chain {
    state: Arc<Mutex<State>>,
}

impl Chain {
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn ran(&self) -> Vec<Ran> {
        self.lock().ran.clone()
    }

    pub fn ran_of(&self, name: &str) -> Vec<Ran> {
        self.ran().into_iter().filter(|r| r.name == name).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.ran().into_iter().map(|r| r.name).collect()
    }

    pub fn applied(&self, profile: &str) -> Option<Value> {
        self.lock().applied.get(profile).cloned()
    }

    pub fn set_applied(&self, profile: &str, value: Value) {
        self.lock().applied.insert(profile.into(), value);
    }

    /// The infrastructure goes away behind the controller's back.
    pub fn drift(&self, profile: &str) {
        self.lock().applied.remove(profile);
    }

    /// Step `name` fails its next `times` runs (before its effect).
    pub fn fail(&self, name: &str, times: usize) {
        self.lock().fail.insert(name.into(), times);
    }

    pub fn panic_once(&self, name: &str) {
        self.lock().panic.insert(name.into());
    }

    /// `hook` runs inside step `name`, every time it runs.
    pub fn on_step(&self, name: &str, hook: impl Fn() + Send + Sync + 'static) {
        self.lock().hooks.insert(name.into(), Arc::new(hook));
    }

    /// What steps refused to do, in order.
    pub fn errors(&self) -> Vec<String> {
        self.lock().errors.clone()
    }

    /// Runs one step's body: recorded, hooked, scripted, then its effect.
    fn body(
        &self,
        step: &blue_kubernetes::steps::Step,
        previous: Option<Token>,
        effect: impl FnOnce(&mut State),
    ) -> CallbackResult<()> {
        let hook = {
            let mut s = self.lock();
            s.ran.push(Ran {
                name: step.name().into(),
                key: step.key().into(),
                run: step.run().into(),
                interrupted: step.interrupted(),
                previous,
            });
            s.hooks.get(step.name()).cloned()
        };
        if let Some(hook) = hook {
            hook();
        }
        let mut s = self.lock();
        if let Some(left) = s.fail.get_mut(step.name()).filter(|n| **n > 0) {
            *left -= 1;
            return Err(format!("{} failed", step.name()).into());
        }
        if s.panic.remove(step.name()) {
            drop(s);
            panic!("{} panicked", step.name());
        }
        effect(&mut s);
        Ok(())
    }

    /// Converge is `s1..sN`, delete `d1, d2`.
    pub fn package(&self, n: usize) -> Package {
        self.shaped(Shape::Chain(n))
    }

    /// The same effect in one plain `converge`, without steps.
    pub fn plain_package(&self) -> Package {
        self.shaped(Shape::Plain)
    }

    /// Steps not declared: `converge` and `observe` try to run one, keep
    /// the error, and go on without.
    pub fn undeclared_package(&self) -> Package {
        self.shaped(Shape::Undeclared)
    }

    /// A converge whose one step is named `name` and returns a result too
    /// large to record when `big`; it swallows the step's error and applies
    /// the value anyway, so only the controller's rule can fail the pass.
    pub fn rule_breaker(&self, name: &'static str, big: bool) -> Package {
        self.shaped(Shape::RuleBreaker(name, big))
    }

    /// A converge whose step tries to run a step inside itself, keeps the
    /// error and applies the value.
    pub fn nested_package(&self) -> Package {
        self.shaped(Shape::Nested)
    }

    fn shaped(&self, shape: Shape) -> Package {
        let schema = ResourceSchema::new(crate::common::widgets());
        let schema = match shape {
            Shape::Plain | Shape::Undeclared => schema,
            _ => schema.steps(),
        };
        let package = Shaped {
            chain: self.clone(),
            shape,
        };
        Package::with_schema(package, schema).unwrap()
    }
}

/// What a chain package's callbacks do.
#[derive(Clone, Copy)]
enum Shape {
    Chain(usize),
    Plain,
    Undeclared,
    RuleBreaker(&'static str, bool),
    Nested,
}

/// A chain package of one shape.
struct Shaped {
    chain: Chain,
    shape: Shape,
}

type Cx = Context<Map<String, Value>>;

fn value(cx: &Cx) -> i64 {
    cx.config()
        .get("value")
        .and_then(Value::as_i64)
        .unwrap_or_default()
}

#[async_trait]
impl Infrastructure for Shaped {
    type Config = Map<String, Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(crate::common::widgets())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<Self::Config>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let chain = &self.chain;
        if let Shape::Undeclared = self.shape {
            if let Err(e) = cx.steps().run("look", |_| async { Ok(()) }).await {
                chain.lock().errors.push(e.to_string());
            }
            let held = chain.applied(cx.profile());
            return Ok(Observation::new(
                held.is_some(),
                held.is_some(),
                held.is_some(),
            ));
        }
        let held = chain.applied(cx.profile());
        let matches = held.as_ref().and_then(Value::as_i64) == Some(value(cx));
        Ok(Observation::new(held.is_some(), matches, held.is_some()))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let (chain, steps) = (&self.chain, cx.steps());
        match self.shape {
            Shape::Chain(n) => {
                let mut previous: Option<Token> = None;
                for i in 1..=n {
                    let (chain, prev) = (chain.clone(), previous.clone());
                    let (profile, value) = (cx.profile().to_string(), value(cx));
                    let token = steps
                        .run(&format!("s{i}"), |step| async move {
                            chain.body(&step, prev, |s| {
                                if i == n {
                                    s.applied.insert(profile, value.into());
                                }
                            })?;
                            Ok(Token {
                                step: i as u32,
                                value,
                            })
                        })
                        .await?;
                    previous = Some(token);
                }
            }
            Shape::Plain => chain.set_applied(cx.profile(), value(cx).into()),
            Shape::Undeclared => {
                if let Err(e) = steps.run("make", |_| async { Ok(()) }).await {
                    chain.lock().errors.push(e.to_string());
                }
                chain.set_applied(cx.profile(), value(cx).into());
            }
            Shape::RuleBreaker(name, big) => {
                let result = steps
                    .run(name, |_| async move {
                        Ok(if big { "x".repeat(2048) } else { String::new() })
                    })
                    .await;
                if let Err(e) = result {
                    chain.lock().errors.push(e.to_string());
                }
                chain.set_applied(cx.profile(), value(cx).into());
            }
            Shape::Nested => {
                steps
                    .run("outer", |_| async {
                        if let Err(e) = steps.run("inner", |_| async { Ok(()) }).await {
                            chain.lock().errors.push(e.to_string());
                        }
                        chain.set_applied(cx.profile(), value(cx).into());
                        Ok(())
                    })
                    .await?;
            }
        }
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let Shape::Chain(_) = self.shape else {
            return Ok(Outcome::done());
        };
        let steps = cx.steps();
        for name in ["d1", "d2"] {
            let (chain, profile) = (self.chain.clone(), cx.profile().to_string());
            steps
                .run(name, |step| async move {
                    chain.body(&step, None, |s| {
                        if name == "d2" {
                            s.applied.remove(&profile);
                        }
                    })
                })
                .await?;
        }
        Ok(Outcome::done())
    }
}
