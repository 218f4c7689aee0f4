use std::collections::BTreeMap;
use std::time::Duration;

use kroupier_coordinator::connection::SecurityProtocol;

use super::properties::{Problem, parse};
use super::*;

fn field(change: impl FnOnce(&mut WorkerConfig)) -> &'static str {
    let mut config = WorkerConfig::new("orders");
    change(&mut config);
    config.validate().unwrap_err().field
}

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn from(pairs: &[(&str, &str)]) -> Result<WorkerConfig, PropertiesError> {
    WorkerConfig::from_properties(&props(pairs))
}

#[test]
fn defaults_are_valid_and_derived() {
    let config = WorkerConfig::new("orders");
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(config.member.membership.group_id, "orders");
    assert_eq!(config.member.cluster.bootstrap_servers, ["127.0.0.1:9092"]);
    assert_eq!(
        config.member.cluster.connection.client_id,
        "kroupier-worker"
    );
    assert!(config.member.membership.await_revocation);
    assert_eq!(config.self_fence_margin(), Duration::from_secs(3));
    // min(1 s, 3 s / 2)
    assert_eq!(config.abort_timeout(), Duration::from_secs(1));
    assert_eq!(config.stop_bound(), Duration::from_secs(6));
    assert_eq!(config.status.addr, Some("127.0.0.1:0".parse().unwrap()));
    assert_eq!(config.supervisor().abort_timeout, Duration::from_secs(1));
}

#[test]
fn a_short_session_derives_an_abort_timeout_that_fits() {
    // Used to fail validation with the fixed 1 s default: callers computed it by hand.
    let mut config = WorkerConfig::new("orders");
    config.member.membership.session_timeout = Duration::from_secs(3);
    config.member.membership.heartbeat_interval = Duration::from_millis(500);
    assert_eq!(config.self_fence_margin(), Duration::from_millis(500));
    assert_eq!(config.abort_timeout(), Duration::from_millis(250));
    assert_eq!(config.validate(), Ok(()));
    // A set value wins over the derived one.
    config.tasks.abort_timeout = Some(Duration::from_millis(100));
    assert_eq!(config.abort_timeout(), Duration::from_millis(100));
    assert_eq!(
        config.supervisor().abort_timeout,
        Duration::from_millis(100)
    );
}

#[test]
fn the_broker_checks_the_minimum_session_unless_one_is_set() {
    let mut config = WorkerConfig::new("orders");
    config.member.membership.session_timeout = Duration::from_secs(2);
    config.member.membership.heartbeat_interval = Duration::from_millis(500);
    assert_eq!(
        config.validate(),
        Ok(()),
        "no client-side guess of the bound"
    );
    config.member.membership.min_session_timeout = Duration::from_secs(6);
    let err = config.validate().unwrap_err();
    assert_eq!(err.field, "member.membership.session_timeout");
    assert!(err.reason.contains("min/max_session_timeout"), "{err}");
}

#[test]
fn a_stop_longer_than_the_join_gate_is_rejected() {
    let mut config = WorkerConfig::new("orders");
    config.member.membership.rebalance_timeout = Duration::from_secs(10);
    // margin 3 s (heartbeat interval), gate 7 s; 6 s graceful + 1 s abort does not fit.
    config.tasks.graceful_stop_timeout = Duration::from_secs(6);
    let err = config.validate().unwrap_err();
    assert_eq!(err.field, "tasks.graceful_stop_timeout");
    assert!(
        err.reason
            .contains("raise member.membership.rebalance_timeout")
    );
    config.tasks.graceful_stop_timeout = Duration::from_secs(5);
    assert_eq!(config.validate(), Ok(()));
}

#[test]
fn each_rule_names_its_field() {
    assert_eq!(field(|c| c.worker_id.clear()), "worker_id");
    assert_eq!(
        field(|c| c.member.cluster.connection.client_id.clear()),
        "member.cluster.connection.client_id"
    );
    assert_eq!(
        field(|c| c.member.cluster.bootstrap_servers.clear()),
        "member.cluster.bootstrap_servers"
    );
    assert_eq!(
        field(|c| c.member.cluster.bootstrap_servers = vec!["kafka".into()]),
        "member.cluster.bootstrap_servers"
    );
    assert_eq!(
        field(|c| c.member.membership.group_id.clear()),
        "member.membership.group_id"
    );
    assert_eq!(
        field(|c| c.member.membership.heartbeat_interval = Duration::from_secs(8)),
        "member.membership.heartbeat_interval"
    );
    assert_eq!(
        field(|c| c.member.membership.heartbeat_interval = Duration::ZERO),
        "member.membership.heartbeat_interval"
    );
    assert_eq!(
        field(|c| c.member.membership.rebalance_timeout = Duration::from_secs(1)),
        "member.membership.rebalance_timeout"
    );
    assert_eq!(
        field(|c| c.member.membership.session_timeout = Duration::from_secs(3600)),
        "member.membership.session_timeout"
    );
    assert_eq!(
        field(|c| c.member.membership.await_revocation = false),
        "member.membership.await_revocation"
    );
    assert_eq!(
        field(|c| c.tasks.abort_timeout = Some(Duration::from_secs(4))),
        "tasks.abort_timeout"
    );
    assert_eq!(
        field(|c| c.tasks.restart.max_attempts = 0),
        "restart.max_attempts"
    );
}

#[test]
fn group_instance_id_has_one_rule() {
    for bad in ["", "a b", ".", "..", &"x".repeat(250)] {
        let err = WorkerConfig {
            member: {
                let mut member = WorkerConfig::new("g").member;
                member.membership.group_instance_id = Some(bad.to_owned());
                member
            },
            ..WorkerConfig::new("g")
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.field, "member.membership.group_instance_id", "{bad:?}");
        assert!(err.reason.contains("[a-zA-Z0-9._-]"), "{err}");
    }
    let mut config = WorkerConfig::new("g");
    config.member.membership.group_instance_id = Some("pod-1.zone_a".into());
    assert_eq!(config.validate(), Ok(()));
}

#[test]
fn every_kafka_property_lands_in_its_field() {
    let config = from(&[
        ("bootstrap.servers", " kafka-1:9092, kafka-2:9092 ,"),
        ("client.id", "orders-app"),
        ("client.rack", "eu-west-1a"),
        ("group.id", "orders"),
        ("group.instance.id", "pod-1"),
        ("session.timeout.ms", "6000"),
        ("heartbeat.interval.ms", "1500"),
        ("rebalance.timeout.ms", "45000"),
        ("request.timeout.ms", "20000"),
        ("retry.backoff.ms", "200"),
        ("retry.backoff.max.ms", "2000"),
        ("reconnect.backoff.ms", "70"),
        ("reconnect.backoff.max.ms", "3000"),
        ("socket.connection.setup.timeout.ms", "4000"),
    ])
    .unwrap();
    let ms = Duration::from_millis;
    let (cluster, membership) = (&config.member.cluster, &config.member.membership);
    assert_eq!(cluster.bootstrap_servers, ["kafka-1:9092", "kafka-2:9092"]);
    assert_eq!(cluster.connection.client_id, "orders-app");
    assert_eq!(config.rack.as_deref(), Some("eu-west-1a"));
    assert_eq!(membership.group_id, "orders");
    assert_eq!(membership.group_instance_id.as_deref(), Some("pod-1"));
    assert_eq!(membership.session_timeout, ms(6000));
    assert_eq!(membership.heartbeat_interval, ms(1500));
    assert_eq!(membership.rebalance_timeout, ms(45000));
    // One home each (the membership's requests use the cluster's).
    assert_eq!(cluster.connection.request_timeout, ms(20000));
    assert_eq!(cluster.retry_backoff, ms(200));
    assert_eq!(cluster.retry_backoff_max, ms(2000));
    assert_eq!(cluster.reconnect_backoff, ms(70));
    assert_eq!(cluster.reconnect_backoff_max, ms(3000));
    assert_eq!(cluster.connection.connect_timeout, ms(4000));
    assert_eq!(config.validate(), Ok(()));
}

#[test]
fn every_kroupier_property_lands_in_its_field() {
    let config = from(&[
        ("kroupier.worker.id", "worker-a"),
        ("kroupier.capacity", "12"),
        ("task.shutdown.graceful.timeout.ms", "2500"),
        ("kroupier.task.abort.timeout.ms", "300"),
        ("kroupier.self.fence.margin.ms", "3500"),
        ("kroupier.group.min.session.timeout.ms", "6000"),
        ("kroupier.status.addr", "127.0.0.1:8083"),
    ])
    .unwrap();
    assert_eq!(config.worker_id, "worker-a");
    assert_eq!(config.capacity, Some(12));
    assert_eq!(
        config.tasks.graceful_stop_timeout,
        Duration::from_millis(2500)
    );
    assert_eq!(config.tasks.abort_timeout, Some(Duration::from_millis(300)));
    assert_eq!(
        config.member.membership.self_fence_margin,
        Some(Duration::from_millis(3500))
    );
    assert_eq!(
        config.member.membership.min_session_timeout,
        Duration::from_secs(6)
    );
    assert_eq!(config.status.addr, Some("127.0.0.1:8083".parse().unwrap()));
    let off = from(&[("kroupier.status.addr", "none")]).unwrap();
    assert_eq!(off.status.addr, None);
}

#[test]
fn unknown_keys_are_errors_that_name_them() {
    let err = from(&[("sesion.timeout.ms", "6000")]).unwrap_err();
    assert!(
        matches!(&err.0, Problem::UnknownKey { key, .. } if key == "sesion.timeout.ms"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`sesion.timeout.ms`"), "{err}");
    let err = from(&[("partition.assignment.strategy", "x")]).unwrap_err();
    assert!(err.to_string().contains("WorkerBuilder::assignor"), "{err}");
}

#[test]
fn bad_values_are_errors_that_name_the_key() {
    for (key, value) in [
        ("session.timeout.ms", "10s"),
        ("heartbeat.interval.ms", "-1"),
        ("rebalance.timeout.ms", ""),
        ("kroupier.capacity", "lots"),
        ("kroupier.status.addr", "localhost"),
    ] {
        let err = from(&[(key, value)]).unwrap_err();
        assert!(
            matches!(&err.0, Problem::InvalidValue { key: k, .. } if k == key),
            "{key}: {err:?}"
        );
        assert!(err.to_string().contains(key), "{err}");
    }
}

#[test]
fn security_properties_become_the_clusters_security_and_are_not_printed() {
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="secret-password";"#;
    let config = from(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", jaas),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", "/etc/kafka/ca.pem"),
    ])
    .unwrap();
    assert_eq!(config.security.get("security.protocol"), Some("SASL_SSL"));
    assert_eq!(config.security.keys().count(), 5);
    let security = &config.member.cluster.security;
    assert_eq!(security.protocol(), SecurityProtocol::SaslSsl);
    assert_eq!(security.sasl.as_ref().map(|s| s.mechanism()), Some("PLAIN"));
    let shown = format!("{config:?}");
    assert!(shown.contains("sasl.jaas.config") && shown.contains("alice"));
    assert!(!shown.contains("secret-password"), "{shown}");

    let bad = from(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", "secret-password"),
    ])
    .unwrap_err();
    assert!(matches!(bad.0, Problem::Security(_)), "{bad:?}");
    assert!(bad.to_string().contains("sasl.jaas.config"), "{bad}");
    assert!(!bad.to_string().contains("secret-password"), "{bad}");
}

#[test]
fn rules_between_properties_are_left_to_validate() {
    let config = from(&[("session.timeout.ms", "3000")]).unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(err.field, "member.membership.heartbeat_interval");
}

#[test]
fn properties_files_parse_like_java() {
    let text = "# comment\n! also a comment\n\n  bootstrap.servers = a:1,\\\n    b:2\n\
                group.id:orders\nclient.id worker\\u0041\nkey\\=with\\:seps=v\\tx\nempty=\n";
    let parsed = parse(text).unwrap();
    assert_eq!(parsed["bootstrap.servers"], "a:1,b:2");
    assert_eq!(parsed["group.id"], "orders");
    assert_eq!(parsed["client.id"], "workerA");
    assert_eq!(parsed["key=with:seps"], "v\tx");
    assert_eq!(parsed["empty"], "");
    assert_eq!(parse("=value"), Err((1, "the line has a value but no key")));
    assert!(parse("a=\\u00").is_err());
}

#[test]
fn a_properties_file_becomes_a_config() {
    let dir = std::env::temp_dir().join(format!("kroupier-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("worker.properties");
    std::fs::write(&path, "bootstrap.servers=k:9092\ngroup.id=orders\n").unwrap();
    let config = WorkerConfig::from_properties_file(&path).unwrap();
    assert_eq!(config.member.membership.group_id, "orders");
    std::fs::write(&path, "group.id=orders\nnope=1\n").unwrap();
    let err = WorkerConfig::from_properties_file(&path).unwrap_err();
    assert!(matches!(err.0, Problem::UnknownKey { .. }), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    let err = WorkerConfig::from_properties_file(dir.join("missing")).unwrap_err();
    assert!(matches!(err.0, Problem::Read { .. }), "{err:?}");
    assert!(err.to_string().contains("missing"));
}

#[test]
fn the_status_api_binds_to_loopback_by_default() {
    let addr = WorkerConfig::default().status.addr.expect("on by default");
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(DEFAULT_STATUS_ADDR, addr);
}

#[test]
fn status_token_and_tls_come_from_properties_and_the_token_is_never_shown() {
    let config = WorkerConfig::from_properties(&props(&[
        ("kroupier.status.token", "t0ken-do-not-show"),
        ("kroupier.status.token.protect.reads", "true"),
        (
            "kroupier.status.tls.certificate",
            "/etc/kroupier/status.pem",
        ),
        ("kroupier.status.tls.key", "/etc/kroupier/status-key.pem"),
    ]))
    .unwrap();
    assert_eq!(
        config.status.token.as_ref().map(Secret::expose),
        Some("t0ken-do-not-show")
    );
    assert!(config.status.protect_reads);
    assert_eq!(
        config.status.tls_key.as_deref(),
        Some(std::path::Path::new("/etc/kroupier/status-key.pem"))
    );
    assert_eq!(config.validate(), Ok(()));
    let shown = format!("{config:?}");
    assert!(!shown.contains("t0ken-do-not-show"), "{shown}");

    let empty = WorkerConfig::from_properties(&props(&[("kroupier.status.token", "")])).unwrap();
    assert_eq!(empty.status.token, None);
    let error =
        WorkerConfig::from_properties(&props(&[("kroupier.status.token.protect.reads", "yes")]))
            .unwrap_err();
    assert!(error.to_string().contains("`true` or `false`"), "{error}");
}

#[test]
fn status_tls_needs_both_files_and_protected_reads_need_a_token() {
    assert_eq!(
        field(|c| c.status.tls_certificate = Some("cert.pem".into())),
        "status.tls_certificate"
    );
    assert_eq!(
        field(|c| c.status.tls_key = Some("key.pem".into())),
        "status.tls_certificate"
    );
    assert_eq!(
        field(|c| c.status.protect_reads = true),
        "status.protect_reads"
    );
}

#[test]
fn fast_failover_is_on_by_default_and_one_property_turns_it_off() {
    assert!(WorkerConfig::default().status.fast_failover);
    let off =
        WorkerConfig::from_properties(&props(&[("kroupier.failover.fast", "false")])).unwrap();
    assert!(!off.status.fast_failover);
    let error =
        WorkerConfig::from_properties(&props(&[("kroupier.failover.fast", "maybe")])).unwrap_err();
    assert!(
        error.to_string().contains("kroupier.failover.fast"),
        "{error}"
    );
}

#[test]
fn the_task_store_is_off_by_default_and_two_properties_set_it() {
    // Off by default: a group that does not use the store sees no topic appear.
    assert_eq!(
        WorkerConfig::default().tasks.store,
        TaskStoreConfig::default()
    );
    assert!(!WorkerConfig::default().tasks.store.enabled);
    let on = WorkerConfig::from_properties(&props(&[
        ("tasks.store.enabled", "true"),
        ("tasks.store.topic", "orders-tasks"),
    ]))
    .unwrap();
    assert!(on.tasks.store.enabled);
    assert_eq!(on.tasks.store.topic.as_deref(), Some("orders-tasks"));
    let error =
        WorkerConfig::from_properties(&props(&[("tasks.store.enabled", "yes")])).unwrap_err();
    assert!(error.to_string().contains("tasks.store.enabled"), "{error}");
}

#[test]
fn the_advertised_status_address_comes_from_its_property_and_defaults_to_the_bound_one() {
    assert_eq!(WorkerConfig::default().status.advertised_addr, None);
    let config = from(&[
        ("kroupier.status.addr", "0.0.0.0:8083"),
        (
            "kroupier.status.advertised.address",
            "worker-3.example.com:31083",
        ),
    ])
    .unwrap();
    assert_eq!(
        config.status.advertised_addr.as_deref(),
        Some("worker-3.example.com:31083")
    );
    assert_eq!(config.validate(), Ok(()));
    let ipv6 = from(&[("kroupier.status.advertised.address", "[fd00::3]:8083")]).unwrap();
    assert_eq!(
        ipv6.status.advertised_addr.as_deref(),
        Some("[fd00::3]:8083")
    );
    let empty = from(&[("kroupier.status.advertised.address", "")]).unwrap();
    assert_eq!(empty.status.advertised_addr, None);
}

#[test]
fn an_advertised_status_address_that_is_not_host_port_is_refused() {
    let key = "kroupier.status.advertised.address";
    for value in [
        "worker-3",
        "worker-3:",
        "worker-3:0",
        "worker-3:99999",
        "http://worker-3:80",
    ] {
        let error = from(&[(key, value)]).unwrap_err();
        assert!(
            matches!(&error.0, Problem::InvalidValue { key: k, .. } if k == key),
            "{value}: {error:?}"
        );
        let shown = error.to_string();
        assert!(
            shown.contains(key) && shown.contains("`host:port`"),
            "{shown}"
        );
    }
    // Set in code, it is checked by validate.
    let mut config = WorkerConfig::new("orders");
    config.status.advertised_addr = Some("worker-3".into());
    let error = config.validate().unwrap_err();
    assert_eq!(error.field, "status.advertised_addr");
    assert!(error.reason.contains("no port"), "{}", error.reason);
}
