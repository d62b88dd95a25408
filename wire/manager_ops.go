package wire

// The ops of the manager control service (docs/agents.md "The manager service"), sent as
// ControlRequest.Op on cotal.<s>.ctl.manager.<sender>. The server and the client take the
// names, arguments and replies from here, so the two cannot drift apart.
const (
	// OpManagerSpawn starts a teammate from an agent file; args ManagerNameArgs, reply data
	// ManagedAgent.
	OpManagerSpawn = "spawn"
	// OpManagerDespawn stops the caller, or a teammate it spawned; args ManagerDespawnArgs or
	// none, reply data ManagerDespawnReply.
	OpManagerDespawn = "despawn"
	// OpManagerPersona reads an agent file; args ManagerNameArgs, reply data ManagerPersona.
	OpManagerPersona = "persona"
	// OpManagerList lists the supervised agents of the space; no args, reply data
	// []ManagedAgent.
	OpManagerList = "list"
)

// ManagerNameArgs are the args of spawn and persona: an agent file's name, never a path.
type ManagerNameArgs struct {
	Name string `json:"name"`
}

// ManagerDespawnArgs are despawn's args: the supervised agent to stop; empty is the caller.
type ManagerDespawnArgs struct {
	Name string `json:"name,omitempty"`
}

// ManagerDespawnReply is despawn's reply data: the agent and the state it is left in.
type ManagerDespawnReply struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// ManagedAgent is one supervised agent as list and spawn answer it.
type ManagedAgent struct {
	Name      string `json:"name"`
	ID        string `json:"id"`
	State     string `json:"state"`
	Presence  string `json:"presence"`
	Restarts  int    `json:"restarts"`
	SpawnedBy string `json:"spawnedBy,omitempty"`
}

// ManagerPersona is persona's reply data: an agent file's identity, grants and persona text.
type ManagerPersona struct {
	Name           string   `json:"name"`
	Role           string   `json:"role,omitempty"`
	Description    string   `json:"description,omitempty"`
	Subscribe      []string `json:"subscribe,omitempty"`
	AllowSubscribe []string `json:"allowSubscribe,omitempty"`
	AllowPublish   []string `json:"allowPublish,omitempty"`
	Capabilities   []string `json:"capabilities,omitempty"`
	Persona        string   `json:"persona,omitempty"`
}
