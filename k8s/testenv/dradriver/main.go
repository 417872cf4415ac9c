// Command dradriver is a small DRA driver for the test cluster of
// k8s/testenv/cluster.sh. It stands in for DraNet, which cannot be built
// here: it registers with one node's kubelet under DraNet's driver name
// (dra.net), publishes that node's extra NICs (links named PREFIX*, veths
// that cluster.sh --dra-nics made) as devices with DraNet's attribute
// names, logs every prepare and unprepare, and places each prepared NIC in
// its pod: once the pod's sandbox is up (found through the node's CRI
// socket), it moves the link into the sandbox's network namespace, puts
// its addresses back, applies the claim's interface settings (MTU,
// GSO/GRO sizes) and writes the claim's status.devices[].networkData as
// DraNet does. Unprepare moves the link back to the node.
//
// It is not DraNet: no PCI or RDMA discovery, no NRI, no routes, no
// ethtool features; a private flag fails the claim's preparation (veths
// have none), as DraNet fails the pod sandbox on a flag its NIC lacks.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// driverName is DraNet's, so wirespeed's DeviceClass and claims select
// this driver's devices unchanged.
const driverName = "dra.net"

// placeTimeout bounds the wait for a prepared claim's pod sandbox.
const placeTimeout = 3 * time.Minute

// netConfig is the part of DraNet's opaque claim parameters this driver
// reads (DraNet's NetworkConfig: interface, routes, ethtool).
type netConfig struct {
	Interface struct {
		Name                string   `json:"name,omitempty"`
		Addresses           []string `json:"addresses,omitempty"`
		MTU                 *int32   `json:"mtu,omitempty"`
		HardwareAddr        *string  `json:"hardwareAddr,omitempty"`
		GSOMaxSize          *int32   `json:"gsoMaxSize,omitempty"`
		GROMaxSize          *int32   `json:"groMaxSize,omitempty"`
		GSOIPv4MaxSize      *int32   `json:"gsoIPv4MaxSize,omitempty"`
		GROIPv4MaxSize      *int32   `json:"groIPv4MaxSize,omitempty"`
		DisableEBPFPrograms *bool    `json:"disableEbpfPrograms,omitempty"`
	} `json:"interface"`
	Routes  []json.RawMessage `json:"routes,omitempty"`
	Ethtool *struct {
		Features     map[string]bool `json:"features,omitempty"`
		PrivateFlags map[string]bool `json:"privateFlags,omitempty"`
	} `json:"ethtool,omitempty"`
}

// placed is one NIC of a claim: where it is and what to restore.
type placed struct {
	device string
	ifName string
	mtu    int
	addrs  []netlink.Addr
	pod    netns.NsHandle // held open until unprepare: keeps the pod's netns (and the link) alive
}

// claimState is what prepare learned about a claim, for unprepare.
type claimState struct {
	ns, name string
	devices  []string
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	nics     []*placed
}

type driver struct {
	node   string
	prefix string
	place  bool
	kube   kubernetes.Interface
	crt    cri.RuntimeServiceClient
	nodeNs netns.NsHandle

	mu     sync.Mutex
	claims map[types.UID]*claimState
}

func main() {
	node := flag.String("node", "", "this node's name (the ResourceSlice pool)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the driver's API identity")
	kubeletDir := flag.String("kubelet-dir", "/var/lib/kubelet", "the kubelet's --root-dir (plugins_registry and plugins/ live there)")
	criSock := flag.String("cri", "", "the node's CRI socket (finds pod sandboxes to place NICs in); empty: never place")
	prefix := flag.String("nic-prefix", "dra", "publish the links whose names start with this")
	place := flag.Bool("place", true, "move prepared NICs into their pods")
	flag.Parse()
	log.SetFlags(log.Ldate | log.Ltime | log.Lmicroseconds)
	if *node == "" || *kubeconfig == "" {
		log.Fatal("dradriver: --node and --kubeconfig are required")
	}
	if err := run(*node, *kubeconfig, *kubeletDir, *criSock, *prefix, *place && *criSock != ""); err != nil {
		log.Fatalf("dradriver: %v", err)
	}
}

func run(node, kubeconfig, kubeletDir, criSock, prefix string, place bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodeNs, err := netns.Get()
	if err != nil {
		return fmt.Errorf("this process's network namespace: %w", err)
	}
	d := &driver{node: node, prefix: prefix, place: place, kube: kube, nodeNs: nodeNs, claims: map[types.UID]*claimState{}}
	if criSock != "" {
		conn, err := grpc.NewClient("unix://"+criSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("CRI socket %s: %w", criSock, err)
		}
		defer conn.Close()
		d.crt = cri.NewRuntimeServiceClient(conn)
	}
	devices, err := d.inventory()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reg := filepath.Join(kubeletDir, "plugins_registry")
	data := filepath.Join(kubeletDir, "plugins", driverName)
	for _, dir := range []string{reg, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(driverName),
		kubeletplugin.KubeClient(kube),
		kubeletplugin.NodeName(node),
		kubeletplugin.RegistrarDirectoryPath(reg),
		kubeletplugin.PluginDataDirectoryPath(data),
	)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
	if err := helper.PublishResources(ctx, res); err != nil {
		return fmt.Errorf("publish the ResourceSlice: %w", err)
	}
	names := make([]string, 0, len(devices))
	for _, dv := range devices {
		names = append(names, dv.Name)
	}
	log.Printf("node %s: publishing %d device(s) of driver %s: %s (placing NICs in pods: %v)", node, len(devices), driverName, strings.Join(names, ", "), place)
	// The kubelet confirms the registration; cluster.sh waits for this line.
	for i := 0; i < 600 && ctx.Err() == nil; i++ {
		if st := helper.RegistrationStatus(); st != nil {
			if !st.PluginRegistered {
				return fmt.Errorf("the kubelet refused the registration: %s", st.Error)
			}
			log.Printf("registered with the kubelet (%s)", reg)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	<-ctx.Done()
	log.Printf("stopping: %v", context.Cause(ctx))
	d.unprepareAll()
	return nil
}

// inventory lists this node's links named PREFIX* as devices with
// DraNet's attributes (dra.net/ifName, mac, mtu, encapsulation, alias,
// state, type, ipv4, virtual, rdma, sriov, ebpf).
func (d *driver) inventory() ([]resourceapi.Device, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []resourceapi.Device
	for _, l := range links {
		a := l.Attrs()
		if !strings.HasPrefix(a.Name, d.prefix) {
			continue
		}
		attr := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		s := func(k, v string) {
			attr[resourceapi.QualifiedName(driverName+"/"+k)] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
		}
		b := func(k string, v bool) {
			attr[resourceapi.QualifiedName(driverName+"/"+k)] = resourceapi.DeviceAttribute{BoolValue: ptr.To(v)}
		}
		s("ifName", a.Name)
		s("mac", a.HardwareAddr.String())
		attr[driverName+"/mtu"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(a.MTU))}
		s("encapsulation", a.EncapType)
		s("alias", a.Alias)
		s("state", a.OperState.String())
		s("type", l.Type())
		if addrs, err := netlink.AddrList(l, netlink.FAMILY_V4); err == nil && len(addrs) > 0 {
			var v4 []string
			for _, ad := range addrs {
				v4 = append(v4, ad.IP.String())
			}
			s("ipv4", strings.Join(v4, ","))
		}
		// No PCI device behind a veth: DraNet calls such a link virtual.
		b("virtual", l.Type() != "device")
		b("rdma", false)
		b("sriov", false)
		b("ebpf", false)
		out = append(out, resourceapi.Device{Name: a.Name, Attributes: attr})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("no link named %s* in this network namespace", d.prefix)
	}
	return out, nil
}

// config is the claim's opaque config for this driver (the last one wins,
// as class config comes before claim config).
func config(c *resourceapi.ResourceClaim) (*netConfig, error) {
	cfg := &netConfig{}
	for _, x := range c.Status.Allocation.Devices.Config {
		if x.Opaque == nil || x.Opaque.Driver != driverName || len(x.Opaque.Parameters.Raw) == 0 {
			continue
		}
		if err := json.Unmarshal(x.Opaque.Parameters.Raw, cfg); err != nil {
			return nil, fmt.Errorf("opaque config of %s: %w", driverName, err)
		}
	}
	return cfg, nil
}

// PrepareResourceClaims logs each device of this node's pool, refuses
// what a veth cannot do, and (with --place) starts placing the NICs in
// the claim's pod once its sandbox is up.
func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		var res kubeletplugin.PrepareResult
		var devs []string
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driverName || r.Pool != d.node {
				continue
			}
			log.Printf("prepare claim %s/%s device %s (request %s, pool %s)", c.Namespace, c.Name, r.Device, r.Request, r.Pool)
			res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
			devs = append(devs, r.Device)
		}
		cfg, err := config(c)
		if err == nil && cfg.Ethtool != nil && len(cfg.Ethtool.PrivateFlags) > 0 {
			var flags []string
			for f := range cfg.Ethtool.PrivateFlags {
				flags = append(flags, f)
			}
			sort.Strings(flags)
			err = fmt.Errorf("claim %s/%s: private flag(s) %s: a veth has no driver private flags", c.Namespace, c.Name, strings.Join(flags, ", "))
		}
		if err != nil {
			log.Printf("prepare claim %s/%s failed: %v", c.Namespace, c.Name, err)
			out[c.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		out[c.UID] = res
		d.mu.Lock()
		_, known := d.claims[c.UID]
		if !known && len(devs) > 0 {
			st := &claimState{ns: c.Namespace, name: c.Name, devices: devs, done: make(chan struct{})}
			d.claims[c.UID] = st
			if d.place {
				pctx, cancel := context.WithTimeout(context.Background(), placeTimeout)
				st.cancel = cancel
				go d.placeClaim(pctx, c.DeepCopy(), cfg, st)
			} else {
				close(st.done)
				log.Printf("claim %s/%s: NIC not placed (--place=false)", c.Namespace, c.Name)
			}
		}
		d.mu.Unlock()
	}
	return out, nil
}

// placeClaim waits for the claim's pod sandbox, moves the claim's NICs
// into it and writes their networkData to the claim's status.
func (d *driver) placeClaim(ctx context.Context, c *resourceapi.ResourceClaim, cfg *netConfig, st *claimState) {
	defer close(st.done)
	defer st.cancel()
	what := fmt.Sprintf("claim %s/%s", c.Namespace, c.Name)
	var podUID, podName string
	for _, r := range c.Status.ReservedFor {
		if r.Resource == "pods" {
			podUID, podName = string(r.UID), r.Name
			break
		}
	}
	if podUID == "" {
		log.Printf("%s: NIC not placed: reserved for no pod", what)
		return
	}
	nsPath, err := d.sandboxNetns(ctx, podUID)
	if err != nil {
		log.Printf("%s: NIC not placed: pod %s/%s: %v", what, c.Namespace, podName, err)
		return
	}
	var status []resourceapi.AllocatedDeviceStatus
	for _, dev := range st.devices {
		p, nd, err := d.moveIn(dev, nsPath, cfg)
		if err != nil {
			log.Printf("%s: NIC not placed: device %s: %v", what, dev, err)
			return
		}
		st.mu.Lock()
		st.nics = append(st.nics, p)
		st.mu.Unlock()
		log.Printf("placed %s device %s (%s, %s) in pod %s/%s (netns %s)", what, dev, p.ifName, strings.Join(nd.IPs, ","), c.Namespace, podName, nsPath)
		status = append(status, resourceapi.AllocatedDeviceStatus{Driver: driverName, Pool: d.node, Device: dev, NetworkData: nd})
	}
	if err := d.writeStatus(ctx, c.Namespace, c.Name, status); err != nil {
		log.Printf("%s: NICs placed, but status.devices not written: %v", what, err)
		return
	}
	log.Printf("%s: wrote status.devices networkData", what)
}

// sandboxNetns finds the Ready sandbox of pod `uid` through the CRI and
// returns its network namespace path (polling until ctx ends).
func (d *driver) sandboxNetns(ctx context.Context, uid string) (string, error) {
	for {
		resp, err := d.crt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{Filter: &cri.PodSandboxFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
			State:         &cri.PodSandboxStateValue{State: cri.PodSandboxState_SANDBOX_READY},
		}})
		if err == nil && len(resp.Items) > 0 {
			s, err := d.crt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: resp.Items[0].Id, Verbose: true})
			if err != nil {
				return "", fmt.Errorf("sandbox status: %w", err)
			}
			return netnsOf(s.Info["info"])
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no Ready sandbox within %s (last CRI error: %v)", placeTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// netnsOf reads the network namespace from containerd's verbose sandbox
// info: the runtime spec's network namespace path, else /proc/PID/ns/net.
func netnsOf(info string) (string, error) {
	var v struct {
		Pid  int `json:"pid"`
		Spec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string } `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(info), &v); err != nil {
		return "", fmt.Errorf("sandbox info is not JSON: %w", err)
	}
	for _, n := range v.Spec.Linux.Namespaces {
		if n.Type == "network" && n.Path != "" {
			return n.Path, nil
		}
	}
	if v.Pid > 0 {
		return fmt.Sprintf("/proc/%d/ns/net", v.Pid), nil
	}
	return "", errors.New("sandbox info names no network namespace and no pid")
}

// moveIn moves link `dev` from the node into the netns at nsPath, puts
// its IPv4 addresses back, applies the interface settings and brings it
// up.
func (d *driver) moveIn(dev, nsPath string, cfg *netConfig) (*placed, *resourceapi.NetworkDeviceData, error) {
	nodeH, err := netlink.NewHandleAt(d.nodeNs)
	if err != nil {
		return nil, nil, err
	}
	defer nodeH.Close()
	link, err := nodeH.LinkByName(dev)
	if err != nil {
		return nil, nil, fmt.Errorf("link %s on the node: %w", dev, err)
	}
	addrs, err := nodeH.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, err
	}
	podNs, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", nsPath, err)
	}
	p := &placed{device: dev, ifName: dev, mtu: link.Attrs().MTU, addrs: addrs, pod: podNs}
	if err := nodeH.LinkSetNsFd(link, int(podNs)); err != nil {
		podNs.Close()
		return nil, nil, fmt.Errorf("move %s into %s: %w", dev, nsPath, err)
	}
	podH, err := netlink.NewHandleAt(podNs)
	if err != nil {
		return p, nil, err
	}
	defer podH.Close()
	in, err := podH.LinkByName(dev)
	if err != nil {
		return p, nil, fmt.Errorf("link %s in the pod: %w", dev, err)
	}
	i := cfg.Interface
	for _, s := range []struct {
		v   *int32
		set func(netlink.Link, int) error
	}{
		{i.MTU, podH.LinkSetMTU},
		{i.GSOMaxSize, podH.LinkSetGSOMaxSize},
		{i.GROMaxSize, podH.LinkSetGROMaxSize},
		{i.GSOIPv4MaxSize, podH.LinkSetGSOIPv4MaxSize},
		{i.GROIPv4MaxSize, podH.LinkSetGROIPv4MaxSize},
	} {
		if s.v != nil {
			if err := s.set(in, int(*s.v)); err != nil {
				return p, nil, fmt.Errorf("interface setting %d on %s: %w", *s.v, dev, err)
			}
		}
	}
	nd := &resourceapi.NetworkDeviceData{InterfaceName: dev, HardwareAddress: in.Attrs().HardwareAddr.String()}
	for _, a := range addrs {
		a := a
		a.Label = ""
		if err := podH.AddrAdd(in, &a); err != nil {
			return p, nil, fmt.Errorf("address %s on %s: %w", a.IPNet, dev, err)
		}
		nd.IPs = append(nd.IPs, a.IPNet.String())
	}
	if err := podH.LinkSetUp(in); err != nil {
		return p, nil, err
	}
	return p, nd, nil
}

// writeStatus replaces this driver's entries in the claim's
// status.devices (retrying on conflicts).
func (d *driver) writeStatus(ctx context.Context, ns, name string, mine []resourceapi.AllocatedDeviceStatus) error {
	api := d.kube.ResourceV1().ResourceClaims(ns)
	var err error
	for i := 0; i < 10; i++ {
		var c *resourceapi.ResourceClaim
		c, err = api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []resourceapi.AllocatedDeviceStatus
		for _, s := range c.Status.Devices {
			if s.Driver != driverName {
				keep = append(keep, s)
			}
		}
		c.Status.Devices = append(keep, mine...)
		if _, err = api.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// UnprepareResourceClaims logs each claim and moves its NICs back to the
// node.
func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		d.mu.Lock()
		st := d.claims[c.UID]
		delete(d.claims, c.UID)
		d.mu.Unlock()
		if st == nil {
			log.Printf("unprepare claim %s/%s: nothing prepared here", c.Namespace, c.Name)
			out[c.UID] = nil
			continue
		}
		log.Printf("unprepare claim %s/%s devices %s", c.Namespace, c.Name, strings.Join(st.devices, ", "))
		out[c.UID] = d.release(st)
	}
	return out, nil
}

func (d *driver) unprepareAll() {
	d.mu.Lock()
	all := d.claims
	d.claims = map[types.UID]*claimState{}
	d.mu.Unlock()
	for _, st := range all {
		if err := d.release(st); err != nil {
			log.Printf("release claim %s/%s: %v", st.ns, st.name, err)
		}
	}
}

// release stops a placement still waiting and moves placed NICs back to
// the node with their addresses.
func (d *driver) release(st *claimState) error {
	if st.cancel != nil {
		st.cancel()
	}
	<-st.done
	st.mu.Lock()
	defer st.mu.Unlock()
	var errs []error
	for _, p := range st.nics {
		if err := d.moveBack(p); err != nil {
			errs = append(errs, fmt.Errorf("device %s: %w", p.device, err))
		} else {
			log.Printf("claim %s/%s: device %s back on the node", st.ns, st.name, p.device)
		}
		p.pod.Close()
	}
	st.nics = nil
	return errors.Join(errs...)
}

func (d *driver) moveBack(p *placed) error {
	podH, err := netlink.NewHandleAt(p.pod)
	if err != nil {
		return err
	}
	defer podH.Close()
	link, err := podH.LinkByName(p.ifName)
	if err != nil {
		return fmt.Errorf("link %s not in the pod's netns any more: %w", p.ifName, err)
	}
	if err := podH.LinkSetNsFd(link, int(d.nodeNs)); err != nil {
		return err
	}
	nodeH, err := netlink.NewHandleAt(d.nodeNs)
	if err != nil {
		return err
	}
	defer nodeH.Close()
	back, err := nodeH.LinkByName(p.ifName)
	if err != nil {
		return err
	}
	if err := nodeH.LinkSetMTU(back, p.mtu); err != nil {
		return err
	}
	for _, a := range p.addrs {
		a := a
		if err := nodeH.AddrAdd(back, &a); err != nil && !errors.Is(err, syscall.EEXIST) {
			return err
		}
	}
	return nodeH.LinkSetUp(back)
}

// HandleError logs background errors (publishing the ResourceSlice, the
// gRPC servers); they are retried by the helper.
func (d *driver) HandleError(_ context.Context, err error, msg string) {
	log.Printf("%s: %v", msg, err)
}
