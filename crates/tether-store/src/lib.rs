//! Tether's session cache: a durable, private, versioned journal-and-manifest store.
