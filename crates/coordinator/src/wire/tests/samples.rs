//! A populated request and response of every API kroupier speaks, at every version, with every
//! field the version carries set (so every array holds elements and every length is non-zero).
//! A message whose request and response know different versions (InitProducerId) has a pair at
//! every version of either; the request of a version only the response knows is not encoded.

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};

fn s(v: &'static str) -> StrBytes {
    StrBytes::from_static_str(v)
}

fn opt(cond: bool, v: &'static str) -> Option<StrBytes> {
    cond.then(|| s(v))
}

fn blob(v: &'static [u8]) -> Bytes {
    Bytes::from_static(v)
}

/// A topic id of sixteen `byte`s (kafka-protocol's uuid type is only reachable through a
/// decoded message: a Metadata v10 request topic with a null name).
macro_rules! topic_id {
    ($byte:expr) => {{
        let mut frame = Bytes::from([[$byte; 16].as_slice(), &[0, 0]].concat());
        metadata_request::MetadataRequestTopic::decode(&mut frame, 10)
            .expect("a Metadata v10 topic")
            .topic_id
    }};
}

pub(super) fn api_versions(v: i16) -> (ApiVersionsRequest, ApiVersionsResponse) {
    let mut req = ApiVersionsRequest::default();
    let mut resp = ApiVersionsResponse::default().with_api_keys(vec![
        ApiVersion::default()
            .with_api_key(11)
            .with_min_version(0)
            .with_max_version(9),
        ApiVersion::default()
            .with_api_key(14)
            .with_min_version(0)
            .with_max_version(5),
    ]);
    if v >= 1 {
        resp.throttle_time_ms = 5;
    }
    if v >= 3 {
        req.client_software_name = s("kroupier");
        req.client_software_version = s("0.1.0");
        resp.supported_features = vec![
            SupportedFeatureKey::default()
                .with_name(s("metadata.version"))
                .with_min_version(1)
                .with_max_version(27),
        ];
        resp.finalized_features_epoch = 9;
        resp.finalized_features = vec![
            FinalizedFeatureKey::default()
                .with_name(s("metadata.version"))
                .with_min_version_level(27)
                .with_max_version_level(27),
        ];
        resp.zk_migration_ready = true;
    }
    (req, resp)
}

pub(super) fn metadata(v: i16) -> (MetadataRequest, MetadataResponse) {
    let req = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(TopicName(s("t")))),
        ]))
        .with_allow_auto_topic_creation(v < 4)
        .with_include_cluster_authorized_operations((8..=10).contains(&v))
        .with_include_topic_authorized_operations(v >= 8);
    let partition = MetadataResponsePartition::default()
        .with_partition_index(1)
        .with_leader_id(BrokerId(2))
        .with_leader_epoch(if v >= 7 { 4 } else { -1 })
        .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
        .with_isr_nodes(vec![BrokerId(2)])
        .with_offline_replicas(if v >= 5 { vec![BrokerId(1)] } else { vec![] });
    let topic = MetadataResponseTopic::default()
        .with_name(Some(TopicName(s("t"))))
        .with_is_internal(v >= 1)
        .with_partitions(vec![partition])
        .with_topic_authorized_operations(if v >= 8 { 7 } else { i32::MIN });
    let resp = MetadataResponse::default()
        .with_throttle_time_ms(if v >= 3 { 1 } else { 0 })
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(2))
                .with_host(s("localhost"))
                .with_port(9092)
                .with_rack(opt(v >= 1, "rack-a")),
        ])
        .with_cluster_id(opt(v >= 2, "cluster"))
        .with_controller_id(BrokerId(if v >= 1 { 2 } else { -1 }))
        .with_topics(vec![topic])
        .with_cluster_authorized_operations(if (8..=10).contains(&v) { 3 } else { i32::MIN })
        .with_error_code(0);
    (req, resp)
}

pub(super) fn find_coordinator(v: i16) -> (FindCoordinatorRequest, FindCoordinatorResponse) {
    let mut req = FindCoordinatorRequest::default();
    let mut resp = FindCoordinatorResponse::default();
    if v <= 3 {
        req.key = s("group-a");
        resp.node_id = BrokerId(3);
        resp.host = s("broker-3");
        resp.port = 9093;
        resp.error_code = 0;
        resp.error_message = if v >= 1 { None } else { Some(s("")) };
    } else {
        req.coordinator_keys = vec![s("group-a"), s("group-b")];
        resp.coordinators = vec![
            Coordinator::default()
                .with_key(s("group-a"))
                .with_node_id(BrokerId(3))
                .with_host(s("broker-3"))
                .with_port(9093)
                .with_error_message(None),
            Coordinator::default()
                .with_key(s("group-b"))
                .with_node_id(BrokerId(-1))
                .with_error_code(15)
                .with_error_message(Some(s("not available"))),
        ];
        resp.error_message = Some(s(""));
    }
    if v >= 1 {
        resp.throttle_time_ms = 2;
    }
    (req, resp)
}

pub(super) fn join_group(v: i16) -> (JoinGroupRequest, JoinGroupResponse) {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s("group-a")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(if v >= 1 { 60_000 } else { -1 })
        .with_member_id(s("m-1"))
        .with_group_instance_id(opt(v >= 5, "instance-1"))
        .with_protocol_type(s("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("sticky"))
                .with_metadata(blob(b"\x00\x01meta")),
            JoinGroupRequestProtocol::default()
                .with_name(s("round-robin"))
                .with_metadata(blob(b"")),
        ])
        .with_reason(opt(v >= 8, "joining"));
    let resp = JoinGroupResponse::default()
        .with_throttle_time_ms(if v >= 2 { 3 } else { 0 })
        .with_generation_id(7)
        .with_protocol_type(opt(v >= 7, "kroupier"))
        .with_protocol_name(Some(s("sticky")))
        .with_leader(s("m-1"))
        .with_skip_assignment(v >= 9)
        .with_member_id(s("m-1"))
        .with_members(vec![
            JoinGroupResponseMember::default()
                .with_member_id(s("m-1"))
                .with_group_instance_id(opt(v >= 5, "instance-1"))
                .with_metadata(blob(b"\x00\x01meta")),
            JoinGroupResponseMember::default()
                .with_member_id(s("m-2"))
                .with_metadata(blob(b"x")),
        ]);
    (req, resp)
}

pub(super) fn sync_group(v: i16) -> (SyncGroupRequest, SyncGroupResponse) {
    let req = SyncGroupRequest::default()
        .with_group_id(GroupId(s("group-a")))
        .with_generation_id(7)
        .with_member_id(s("m-1"))
        .with_group_instance_id(opt(v >= 3, "instance-1"))
        .with_protocol_type(opt(v >= 5, "kroupier"))
        .with_protocol_name(opt(v >= 5, "sticky"))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s("m-1"))
                .with_assignment(blob(b"\x00\x01tasks")),
            SyncGroupRequestAssignment::default()
                .with_member_id(s("m-2"))
                .with_assignment(blob(b"")),
        ]);
    let resp = SyncGroupResponse::default()
        .with_throttle_time_ms(if v >= 1 { 4 } else { 0 })
        .with_protocol_type(opt(v >= 5, "kroupier"))
        .with_protocol_name(opt(v >= 5, "sticky"))
        .with_assignment(blob(b"\x00\x01tasks"));
    (req, resp)
}

pub(super) fn heartbeat(v: i16) -> (HeartbeatRequest, HeartbeatResponse) {
    let req = HeartbeatRequest::default()
        .with_group_id(GroupId(s("group-a")))
        .with_generation_id(7)
        .with_member_id(s("m-1"))
        .with_group_instance_id(opt(v >= 3, "instance-1"));
    let resp = HeartbeatResponse::default()
        .with_throttle_time_ms(if v >= 1 { 4 } else { 0 })
        .with_error_code(27);
    (req, resp)
}

pub(super) fn leave_group(v: i16) -> (LeaveGroupRequest, LeaveGroupResponse) {
    let mut req = LeaveGroupRequest::default().with_group_id(GroupId(s("group-a")));
    let mut resp = LeaveGroupResponse::default().with_throttle_time_ms(if v >= 1 { 4 } else { 0 });
    if v <= 2 {
        req.member_id = s("m-1");
    } else {
        req.members = vec![
            MemberIdentity::default()
                .with_member_id(s("m-1"))
                .with_group_instance_id(Some(s("instance-1")))
                .with_reason(opt(v >= 5, "closing")),
        ];
        resp.members = vec![
            MemberResponse::default()
                .with_member_id(s("m-1"))
                .with_group_instance_id(Some(s("instance-1"))),
        ];
    }
    (req, resp)
}

pub(super) fn describe_groups(v: i16) -> (DescribeGroupsRequest, DescribeGroupsResponse) {
    let req = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(s("group-a")), GroupId(s("group-b"))])
        .with_include_authorized_operations(v >= 3);
    let member = DescribedGroupMember::default()
        .with_member_id(s("m-1"))
        .with_group_instance_id(opt(v >= 4, "instance-1"))
        .with_client_id(s("client"))
        .with_client_host(s("/127.0.0.1"))
        .with_member_metadata(blob(b"\x00\x01meta"))
        .with_member_assignment(blob(b"\x00\x01tasks"));
    let resp = DescribeGroupsResponse::default()
        .with_throttle_time_ms(if v >= 1 { 4 } else { 0 })
        .with_groups(vec![
            DescribedGroup::default()
                .with_error_message(opt(v >= 6, "none"))
                .with_group_id(GroupId(s("group-a")))
                .with_group_state(s("Stable"))
                .with_protocol_type(s("kroupier"))
                .with_protocol_data(s("sticky"))
                .with_members(vec![member])
                .with_authorized_operations(if v >= 3 { 5 } else { i32::MIN }),
        ]);
    (req, resp)
}

pub(super) fn list_groups(v: i16) -> (ListGroupsRequest, ListGroupsResponse) {
    let req = ListGroupsRequest::default()
        .with_states_filter(if v >= 4 { vec![s("Stable")] } else { vec![] })
        .with_types_filter(if v >= 5 { vec![s("classic")] } else { vec![] });
    let resp = ListGroupsResponse::default()
        .with_throttle_time_ms(if v >= 1 { 4 } else { 0 })
        .with_groups(vec![
            ListedGroup::default()
                .with_group_id(GroupId(s("group-a")))
                .with_protocol_type(s("kroupier"))
                .with_group_state(if v >= 4 { s("Stable") } else { s("") })
                .with_group_type(if v >= 5 { s("classic") } else { s("") }),
        ]);
    (req, resp)
}

pub(super) fn produce(v: i16) -> (ProduceRequest, ProduceResponse) {
    use produce_request::{PartitionProduceData, TopicProduceData};
    use produce_response::{
        BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
        TopicProduceResponse,
    };
    let mut topic = TopicProduceData::default().with_partition_data(vec![
        PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(blob(b"\x00\x01batch"))),
        PartitionProduceData::default()
            .with_index(1)
            .with_records(None),
    ]);
    let mut answer = TopicProduceResponse::default();
    if v <= 12 {
        topic.name = TopicName(s("tasks"));
        answer.name = TopicName(s("tasks"));
    } else {
        topic.topic_id = topic_id!(7);
        answer.topic_id = topic_id!(7);
    }
    let req = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(s("tx-1"))))
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![topic]);
    let mut partition = PartitionProduceResponse::default()
        .with_index(0)
        .with_error_code(10)
        .with_base_offset(42)
        .with_log_append_time_ms(1_700_000_000_000)
        .with_log_start_offset(if v >= 5 { 3 } else { -1 });
    if v >= 8 {
        partition.record_errors = vec![
            BatchIndexAndErrorMessage::default()
                .with_batch_index(1)
                .with_batch_index_error_message(Some(s("too large"))),
        ];
        partition.error_message = Some(s("record 1 is too large"));
    }
    if v >= 10 {
        partition.current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(2))
            .with_leader_epoch(5);
    }
    answer.partition_responses = vec![partition];
    let mut resp = ProduceResponse::default()
        .with_responses(vec![answer])
        .with_throttle_time_ms(1);
    if v >= 10 {
        resp.node_endpoints = vec![
            NodeEndpoint::default()
                .with_node_id(BrokerId(2))
                .with_host(s("broker-2"))
                .with_port(9092)
                .with_rack(Some(s("rack-a"))),
        ];
    }
    (req, resp)
}

pub(super) fn fetch(v: i16) -> (FetchRequest, FetchResponse) {
    use fetch_request::{FetchPartition, FetchTopic, ForgottenTopic, ReplicaState};
    use fetch_response::{
        AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
        PartitionData, SnapshotId,
    };
    let mut partition = FetchPartition::default()
        .with_partition(0)
        .with_current_leader_epoch(if v >= 9 { 4 } else { -1 })
        .with_fetch_offset(10)
        .with_last_fetched_epoch(if v >= 12 { 3 } else { -1 })
        .with_log_start_offset(if v >= 5 { 2 } else { -1 })
        .with_partition_max_bytes(1 << 20);
    if v >= 17 {
        partition.replica_directory_id = topic_id!(9);
    }
    if v >= 18 {
        partition.high_watermark = 77;
    }
    let mut topic = FetchTopic::default().with_partitions(vec![partition]);
    let mut answer = FetchableTopicResponse::default();
    let mut forgotten = ForgottenTopic::default();
    if v <= 12 {
        topic.topic = TopicName(s("tasks"));
        answer.topic = TopicName(s("tasks"));
        if v >= 7 {
            forgotten.topic = TopicName(s("old"));
        }
    } else {
        topic.topic_id = topic_id!(7);
        answer.topic_id = topic_id!(7);
        forgotten.topic_id = topic_id!(8);
    }
    let mut req = FetchRequest::default()
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(1)
        .with_topics(vec![topic]);
    if v <= 14 {
        req.replica_id = BrokerId(-1);
    } else {
        req.replica_state = ReplicaState::default()
            .with_replica_id(BrokerId(3))
            .with_replica_epoch(9);
    }
    if v >= 7 {
        req.session_id = 5;
        req.session_epoch = 6;
        forgotten.partitions = vec![1, 2];
        req.forgotten_topics_data = vec![forgotten];
    }
    if v >= 11 {
        req.rack_id = s("rack-a");
    }
    if v >= 12 {
        req.cluster_id = Some(s("cluster"));
    }
    let mut data = PartitionData::default()
        .with_partition_index(0)
        .with_error_code(1)
        .with_high_watermark(12)
        .with_last_stable_offset(11)
        .with_log_start_offset(if v >= 5 { 2 } else { -1 })
        .with_aborted_transactions(Some(vec![
            AbortedTransaction::default()
                .with_producer_id(ProducerId(4))
                .with_first_offset(8),
        ]))
        .with_preferred_read_replica(BrokerId(if v >= 11 { 2 } else { -1 }))
        .with_records(Some(blob(b"\x00\x01batch")));
    if v >= 12 {
        data.diverging_epoch = EpochEndOffset::default().with_epoch(3).with_end_offset(9);
        data.current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(2))
            .with_leader_epoch(5);
        data.snapshot_id = SnapshotId::default().with_end_offset(6).with_epoch(1);
    }
    answer.partitions = vec![
        data,
        PartitionData::default()
            .with_partition_index(1)
            .with_aborted_transactions(None)
            .with_records(None),
    ];
    let mut resp = FetchResponse::default()
        .with_throttle_time_ms(1)
        .with_responses(vec![answer]);
    if v >= 7 {
        resp.error_code = 0;
        resp.session_id = 5;
    }
    if v >= 16 {
        resp.node_endpoints = vec![
            NodeEndpoint::default()
                .with_node_id(BrokerId(2))
                .with_host(s("broker-2"))
                .with_port(9092)
                .with_rack(Some(s("rack-a"))),
        ];
    }
    (req, resp)
}

pub(super) fn list_offsets(v: i16) -> (ListOffsetsRequest, ListOffsetsResponse) {
    use list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(if v >= 2 { 1 } else { 0 })
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(s("tasks")))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_current_leader_epoch(if v >= 4 { 4 } else { -1 })
                        .with_timestamp(-1),
                ]),
        ])
        .with_timeout_ms(if v >= 10 { 5_000 } else { 0 });
    let resp = ListOffsetsResponse::default()
        .with_throttle_time_ms(if v >= 2 { 1 } else { 0 })
        .with_topics(vec![
            ListOffsetsTopicResponse::default()
                .with_name(TopicName(s("tasks")))
                .with_partitions(vec![
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(0)
                        .with_error_code(6)
                        .with_timestamp(-1)
                        .with_offset(1_000)
                        .with_leader_epoch(if v >= 4 { 4 } else { -1 }),
                ]),
        ]);
    (req, resp)
}

pub(super) fn create_topics(v: i16) -> (CreateTopicsRequest, CreateTopicsResponse) {
    use create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig};
    use create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
    let req = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(s("tasks")))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![
                    CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![BrokerId(1), BrokerId(2)]),
                ])
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(s("cleanup.policy"))
                        .with_value(Some(s("compact"))),
                    CreatableTopicConfig::default()
                        .with_name(s("retention.ms"))
                        .with_value(None),
                ]),
        ])
        .with_timeout_ms(30_000)
        .with_validate_only(true);
    let mut result = CreatableTopicResult::default()
        .with_name(TopicName(s("tasks")))
        .with_error_code(36)
        .with_error_message(Some(s("Topic 'tasks' already exists.")));
    if v >= 5 {
        result.topic_config_error_code = 29;
        result.num_partitions = 1;
        result.replication_factor = 3;
        result.configs = Some(vec![
            CreatableTopicConfigs::default()
                .with_name(s("cleanup.policy"))
                .with_value(Some(s("compact")))
                .with_read_only(true)
                .with_config_source(5)
                .with_is_sensitive(true),
        ]);
    }
    if v >= 7 {
        result.topic_id = topic_id!(7);
    }
    let resp = CreateTopicsResponse::default()
        .with_throttle_time_ms(1)
        .with_topics(vec![result]);
    (req, resp)
}

pub(super) fn describe_configs(v: i16) -> (DescribeConfigsRequest, DescribeConfigsResponse) {
    use describe_configs_request::DescribeConfigsResource;
    use describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
    };
    let req = DescribeConfigsRequest::default()
        .with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("tasks"))
                .with_configuration_keys(Some(vec![s("cleanup.policy"), s("max.message.bytes")])),
            DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s("1"))
                .with_configuration_keys(None),
        ])
        .with_include_synonyms(true)
        .with_include_documentation(v >= 3);
    let config = DescribeConfigsResourceResult::default()
        .with_name(s("cleanup.policy"))
        .with_value(Some(s("compact")))
        .with_read_only(true)
        .with_config_source(1)
        .with_is_sensitive(true)
        .with_synonyms(vec![
            DescribeConfigsSynonym::default()
                .with_name(s("log.cleanup.policy"))
                .with_value(Some(s("delete")))
                .with_source(5),
        ])
        .with_config_type(if v >= 3 { 7 } else { 0 })
        .with_documentation(Some(s(if v >= 3 {
            "What to do with old segments."
        } else {
            ""
        })));
    let resp = DescribeConfigsResponse::default()
        .with_throttle_time_ms(1)
        .with_results(vec![
            DescribeConfigsResult::default()
                .with_error_code(0)
                .with_error_message(Some(s("")))
                .with_resource_type(2)
                .with_resource_name(s("tasks"))
                .with_configs(vec![
                    config,
                    DescribeConfigsResourceResult::default()
                        .with_name(s("secret"))
                        .with_value(None),
                ]),
        ]);
    (req, resp)
}

/// InitProducerId at `v`. Its request stops at v5 (kafka-protocol 0.18 leaves out the request's
/// unstable v6), its response goes on to v6: the v6 request built here is never encoded.
pub(super) fn init_producer_id(v: i16) -> (InitProducerIdRequest, InitProducerIdResponse) {
    let mut req = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s("tx-1"))))
        .with_transaction_timeout_ms(60_000);
    if v >= 3 {
        req.producer_id = ProducerId(1_234);
        req.producer_epoch = 5;
    }
    let mut resp = InitProducerIdResponse::default()
        .with_throttle_time_ms(1)
        .with_error_code(47)
        .with_producer_id(ProducerId(1_234))
        .with_producer_epoch(6);
    if v >= 6 {
        resp.ongoing_txn_producer_id = ProducerId(1_000);
        resp.ongoing_txn_producer_epoch = 2;
    }
    (req, resp)
}

pub(super) fn add_partitions_to_txn(
    v: i16,
) -> (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse) {
    use add_partitions_to_txn_request::{AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction};
    use add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
    };
    let topics = || {
        vec![
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s("tasks")))
                .with_partitions(vec![0, 1]),
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s("checkpoints")))
                .with_partitions(vec![0]),
        ]
    };
    let results = || {
        vec![
            AddPartitionsToTxnTopicResult::default()
                .with_name(TopicName(s("tasks")))
                .with_results_by_partition(vec![
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(0)
                        .with_partition_error_code(0),
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(1)
                        .with_partition_error_code(53),
                ]),
        ]
    };
    let mut req = AddPartitionsToTxnRequest::default();
    let mut resp = AddPartitionsToTxnResponse::default().with_throttle_time_ms(1);
    if v <= 3 {
        // What a producer sends.
        req.v3_and_below_transactional_id = TransactionalId(s("tx-1"));
        req.v3_and_below_producer_id = ProducerId(1_234);
        req.v3_and_below_producer_epoch = 5;
        req.v3_and_below_topics = topics();
        resp.results_by_topic_v3_and_below = results();
    } else {
        // What a broker sends: a batch of transactions.
        req.transactions = vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(TransactionalId(s("tx-1")))
                .with_producer_id(ProducerId(1_234))
                .with_producer_epoch(5)
                .with_verify_only(true)
                .with_topics(topics()),
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(TransactionalId(s("tx-2")))
                .with_producer_id(ProducerId(1_235))
                .with_topics(topics()),
        ];
        resp.error_code = 51;
        resp.results_by_transaction = vec![
            AddPartitionsToTxnResult::default()
                .with_transactional_id(TransactionalId(s("tx-1")))
                .with_topic_results(results()),
            AddPartitionsToTxnResult::default()
                .with_transactional_id(TransactionalId(s("tx-2")))
                .with_topic_results(results()),
        ];
    }
    (req, resp)
}

pub(super) fn end_txn(v: i16) -> (EndTxnRequest, EndTxnResponse) {
    let req = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s("tx-1")))
        .with_producer_id(ProducerId(1_234))
        .with_producer_epoch(5)
        .with_committed(true);
    let mut resp = EndTxnResponse::default()
        .with_throttle_time_ms(1)
        .with_error_code(48);
    if v >= 5 {
        resp.producer_id = ProducerId(1_234);
        resp.producer_epoch = 6;
    }
    (req, resp)
}
