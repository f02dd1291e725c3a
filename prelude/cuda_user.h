// What a cuda_kernel body sees, on every target.
namespace kjit_user {
using namespace ::kjit::cuda_dialect;
namespace cg = ::cooperative_groups;
using ::kjit::ceildiv, ::kjit::elem_to_loc, ::kjit::elem_to_loc_1, ::kjit::elem_to_loc_2,
    ::kjit::elem_to_loc_3, ::kjit::Limits;
}  // namespace kjit_user
