package framework

import (
	"fmt"
	"sync"
)

// StateKey names a plugin's data in a CycleState; by convention
// "PreFilter" + the plugin's name.
type StateKey string

// StateData is what a plugin stores in a CycleState.
type StateData interface {
	// Clone copies the data; data never changed after PreFilter may
	// return itself.
	Clone() StateData
}

// CycleState carries data between a plugin's extension points during one
// pod's scheduling cycle. It is safe for concurrent use: Filter runs for
// several nodes in parallel.
type CycleState struct {
	mu      sync.RWMutex
	storage map[StateKey]StateData
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: make(map[StateKey]StateData)}
}

// Read returns the data stored under key, or an error naming the key when
// there is none.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.storage[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("reading %q from cycle state: not found", key)
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storage[key] = data
}

// Clone copies the state.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := NewCycleState()
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	return out
}
