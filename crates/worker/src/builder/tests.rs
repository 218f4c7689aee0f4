use std::collections::BTreeMap;
use std::convert::Infallible;

use kroupier_assignor::{
    AssignmentInput, AssignorError, Plan, RebalanceProtocol, RoundRobin, Sticky,
};
use serde::Deserialize;
use serde_json::json;

use super::*;
use crate::catalogue::{CatalogueDetail, CatalogueError};
use crate::error::BuildDetail;
use crate::task::TaskConfigDetail;
use crate::{TaskContext, TaskError};

#[derive(Serialize, Deserialize)]
struct Copy {
    table: String,
}

impl Task for Copy {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

const COPY: Kind<Copy> = Kind::new("copy");

fn builder() -> WorkerBuilder {
    WorkerBuilder::new(WorkerConfig::new("orders")).register(COPY)
}

fn names(builder: WorkerBuilder) -> Vec<&'static str> {
    let built = builder.build().unwrap();
    built.assignors.iter().map(|a| a.name()).collect()
}

#[test]
fn typed_tasks_are_built_from_their_kind() {
    let runtime = builder()
        .typed_task(&COPY, "copy-0", Copy { table: "a".into() })
        .build_runtime()
        .unwrap();
    let catalogue = runtime.supervisor().catalogue();
    let spec = catalogue.get("copy-0").unwrap();
    assert_eq!(
        (spec.kind.as_str(), &spec.config),
        ("copy", &json!({"table": "a"}))
    );
}

#[test]
fn an_unknown_kind_fails_the_build() {
    let err = builder()
        .task(TaskSpec::new("t-0", "cpoy", json!({"table": "a"})))
        .build_runtime()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::from(TaskConfigError::from(TaskConfigDetail::UnknownKind {
            task_id: "t-0".into(),
            kind: "cpoy".into()
        }))
    );
    assert!(err.to_string().contains("register the kind"), "{err}");
}

#[test]
fn a_task_id_that_breaks_the_id_rule_fails_the_build() {
    let err = builder()
        .typed_task(&COPY, "copy/0", Copy { table: "a".into() })
        .build_runtime()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError(BuildDetail::Catalogue(CatalogueError(CatalogueDetail::InvalidId { id, .. }))) if id == "copy/0"),
        "{err:?}"
    );
    assert!(err.to_string().contains("ASCII letters"), "{err}");
}

#[test]
fn a_foreign_kind_is_left_to_other_workers() {
    let runtime = builder()
        .foreign_kind("render")
        .task(TaskSpec::new("r-0", "render", json!({})))
        .build_runtime()
        .unwrap();
    assert_eq!(runtime.metadata().kinds, ["copy".to_owned()].into());
}

#[test]
fn a_config_that_does_not_fit_its_kind_fails_the_build() {
    let err = builder()
        .task(TaskSpec::new("t-0", "copy", json!({"table": 5})))
        .build_runtime()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError(BuildDetail::Task(TaskConfigError(TaskConfigDetail::InvalidConfig { task_id, .. }))) if task_id == "t-0"),
        "{err:?}"
    );
}

#[test]
fn a_typed_config_without_json_form_fails_the_build() {
    let odd: Kind<BTreeMap<(u8, u8), u8>> = Kind::named("odd");
    let err = builder()
        .typed_task(&odd, "odd-0", BTreeMap::from([((1, 2), 3)]))
        .build_runtime()
        .unwrap_err();
    assert!(matches!(err, BuildError(BuildDetail::Task(_))), "{err:?}");
}

#[test]
fn register_with_gets_the_typed_config() {
    #[derive(Deserialize)]
    struct Settings {
        table: String,
    }
    let settings: Kind<Settings> = Kind::new("copy-with");
    let runtime = WorkerBuilder::new(WorkerConfig::new("orders"))
        .register_with(settings, |s: Settings| {
            Ok::<_, Infallible>(Copy { table: s.table })
        })
        .task(TaskSpec::new("c-0", "copy-with", json!({"table": "x"})))
        .build_runtime()
        .unwrap();
    assert_eq!(runtime.supervisor().catalogue().len(), 1);
    let err = WorkerBuilder::new(WorkerConfig::new("orders"))
        .register_with("copy-with", |s: Settings| {
            Ok::<_, Infallible>(Copy { table: s.table })
        })
        .task(TaskSpec::new("c-0", "copy-with", json!({})))
        .build_runtime()
        .unwrap_err();
    assert!(err.to_string().contains("missing field `table`"), "{err}");
}

#[test]
fn no_kind_and_bad_config_fail_before_anything_runs() {
    let err = WorkerBuilder::new(WorkerConfig::new("orders"))
        .build_runtime()
        .unwrap_err();
    assert_eq!(err, BuildError(BuildDetail::NoKinds));
    let mut config = WorkerConfig::new("orders");
    config.worker_id.clear();
    let err = WorkerBuilder::new(config)
        .register(COPY)
        .build_runtime()
        .unwrap_err();
    assert!(matches!(
        err,
        BuildError(BuildDetail::Config(InvalidConfig {
            field: "worker_id",
            ..
        }))
    ));
}

/// Every task on the member with the smallest id: an application's own assignor.
struct Smallest;

impl Assignor for Smallest {
    fn name(&self) -> &'static str {
        "smallest"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        RoundRobin.assign(input)
    }
}

#[test]
fn assignors_are_values_offered_in_order() {
    assert_eq!(names(builder()), ["cooperative"], "the default");
    assert_eq!(
        names(builder().assignor(Smallest).assignor(Sticky)),
        ["smallest", "sticky"]
    );
    let from_names =
        ["sticky", "round-robin"].map(|name| Arc::from(kroupier_assignor::by_name(name).unwrap()));
    assert_eq!(
        names(builder().assignors(from_names)),
        ["sticky", "round-robin"]
    );
    let err = builder()
        .assignor(Sticky)
        .assignor(Sticky)
        .build_runtime()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError(BuildDetail::Config(InvalidConfig { field: "assignors", reason })) if reason.contains("twice")),
        "{err:?}"
    );
}
