//! hyscope-collector: the measurement system inside the application.
