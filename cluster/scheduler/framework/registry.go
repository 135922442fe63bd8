package framework

import "fmt"

// PluginSpec names a plugin of a profile, how to build it and the weight of
// its score.
type PluginSpec struct {
	Name    string
	Factory PluginFactory
	// Weight multiplies the plugin's normalised score; ignored for plugins
	// that do not score.
	Weight int64
}

// Registry maps plugin names to their factories.
type Registry map[string]PluginFactory

// Register adds a factory, refusing a name already registered.
func (r Registry) Register(name string, factory PluginFactory) error {
	if _, ok := r[name]; ok {
		return fmt.Errorf("a plugin named %q is already registered", name)
	}
	r[name] = factory
	return nil
}
