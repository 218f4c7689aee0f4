//! Driver tests on paused time against a model coordinator.
