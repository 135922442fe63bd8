package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// Objects are kept in etcd as JSON with their apiVersion and kind, which is
// what kube-apiserver writes when started with
// --storage-media-type=application/json: readable with plain etcdctl.
var jsonSerializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})

// encode returns obj's stored form, as gv.
func encode(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(jsonSerializer, gv), obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return data, nil
}

// decode reads a stored object into into.
func decode(data []byte, into runtime.Object) error {
	obj, _, err := jsonSerializer.Decode(data, nil, into)
	if err != nil {
		return err
	}
	if obj != into {
		return fmt.Errorf("stored object is a %T, not a %T", obj, into)
	}
	return nil
}
