import CourierCore
import Testing

@Suite struct AddressPolicyRefusalCategoryTests {
    @Test func theCategoryLeavesTheAddressOut() {
        #expect(AddressPolicy.refusalCategory(ip: "127.0.0.1") == "in loopback 127.0.0.0/8")
        #expect(AddressPolicy.refusalCategory(ip: "127.0.0.1")?.hasPrefix("127.0.0.1") == false)
        #expect(AddressPolicy.refusalCategory(ip: "::1") == "loopback")
        #expect(AddressPolicy.refusalCategory(ip: "93.184.216.34") == nil)
        #expect(AddressPolicy.refusalCategory(ip: "not-an-ip")?.contains("not an IP address") == true)
    }
}
