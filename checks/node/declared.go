package node

// DeclaredFacts lists every declared fact (Fact), in the order `nodecheck snapshot` reads the
// ones no check read. A snapshot reads and checks the records of these, and only these,
// when it is opened. Adding a fact is its declaration, beside its reader, and one line here.
func DeclaredFacts() []FactDecl {
	return []FactDecl{
		InventoryFact,
		NVLinkTopologyFact,
		FilesystemsFact,
		ProcessesFact,
		DeviceAccessFact,
	}
}
