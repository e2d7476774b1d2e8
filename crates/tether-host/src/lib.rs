//! Tether's agent host: spawns agents, speaks the Agent Client Protocol (or drives one-shot
//! CLIs such as `claude -p`), and turns their failures into recovery observations.
